package dev.idem.spring;

import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ObjectProvider;

/**
 * Builds the {@link IdempotentInterceptor} on the first call, so that the advisor, which exists before every other
 * bean, does not pull the data source and the stores into early creation.
 */
final class LazyInterceptor implements MethodInterceptor {
    private final ObjectProvider<IdempotentGuards> guards;
    private final ObjectProvider<IdemProperties> properties;
    private final ObjectProvider<ResultCodec> codec;
    private final ObjectProvider<IdempotentObserver> observer;
    private volatile @Nullable IdempotentInterceptor delegate;

    LazyInterceptor(
            ObjectProvider<IdempotentGuards> guards,
            ObjectProvider<IdemProperties> properties,
            ObjectProvider<ResultCodec> codec,
            ObjectProvider<IdempotentObserver> observer) {
        this.guards = guards;
        this.observer = observer;
        this.properties = properties;
        this.codec = codec;
    }

    @Override
    public @Nullable Object invoke(MethodInvocation invocation) throws Throwable {
        IdempotentInterceptor d = delegate;
        if (d == null) {
            synchronized (this) {
                d = delegate;
                if (d == null) {
                    d = new IdempotentInterceptor(
                            guards.getObject(),
                            observer.getIfUnique(() -> IdempotentObserver.NONE),
                            properties.getObject().getNamespace(),
                            codec.getObject());
                    delegate = d;
                }
            }
        }
        return d.invoke(invocation);
    }
}
