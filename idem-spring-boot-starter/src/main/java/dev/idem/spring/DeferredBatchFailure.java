package dev.idem.spring;

import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;

/**
 * The failure of an {@link IdempotentBatch} call, held back until the method's transaction has committed what was
 * applied: the batch interceptor (inside the transaction) records it and returns, this interceptor (outside it,
 * {@link IdempotentAdvisor#outsideTheTransaction}) throws it once the transaction advisor returned. When the commit
 * fails, its exception propagates instead: nothing was applied, and nothing may be acknowledged.
 */
final class DeferredBatchFailure implements MethodInterceptor {
    private static final ThreadLocal<@Nullable Holder> CURRENT = new ThreadLocal<>();

    /** Where the failure of the call on this thread waits. */
    private static final class Holder {
        @Nullable
        RuntimeException failure;
    }

    @Override
    public @Nullable Object invoke(MethodInvocation invocation) throws Throwable {
        Holder previous = CURRENT.get();
        Holder holder = new Holder();
        CURRENT.set(holder);
        Object result;
        try {
            result = invocation.proceed();
        } finally {
            CURRENT.set(previous);
        }
        RuntimeException failure = holder.failure;
        if (failure != null) {
            throw failure;
        }
        return result;
    }

    /**
     * Holds {@code failure} back for the interceptor outside the transaction.
     *
     * @throws IllegalStateException when there is none (the advisors are ordered wrongly): throwing here would roll
     *     back what the caller is then told was applied
     */
    static void defer(RuntimeException failure) {
        Holder holder = CURRENT.get();
        if (holder == null) {
            throw new IllegalStateException(
                    "@IdempotentBatch ran without Idem's outer interceptor: keep the transaction advisor's order at"
                            + " its default (Ordered.LOWEST_PRECEDENCE)",
                    failure);
        }
        holder.failure = failure;
    }
}
