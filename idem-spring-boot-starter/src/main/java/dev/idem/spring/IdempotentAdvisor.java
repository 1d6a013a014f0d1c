package dev.idem.spring;

import java.lang.reflect.Method;
import org.aopalliance.aop.Advice;
import org.springframework.aop.support.AopUtils;
import org.springframework.aop.support.StaticMethodMatcherPointcutAdvisor;
import org.springframework.core.annotation.AnnotatedElementUtils;

/**
 * Applies the {@link IdempotentInterceptor} to {@link Idempotent} and {@link IdempotentBatch} methods. Its order is
 * the lowest, like the transaction advisor's, and it is registered after it, so it runs inside the method's
 * transaction; {@link #outsideTheTransaction} wraps batch methods from outside it.
 */
final class IdempotentAdvisor extends StaticMethodMatcherPointcutAdvisor {
    private static final long serialVersionUID = 1L;

    private final boolean batchOnly;

    private IdempotentAdvisor(Advice interceptor, int order, boolean batchOnly) {
        super(interceptor);
        setOrder(order);
        this.batchOnly = batchOnly;
    }

    /** Inside the method's transaction. */
    IdempotentAdvisor(Advice interceptor) {
        this(interceptor, LOWEST_PRECEDENCE, false);
    }

    /** {@link DeferredBatchFailure} around {@link IdempotentBatch} methods, outside their transaction. */
    static IdempotentAdvisor outsideTheTransaction() {
        return new IdempotentAdvisor(new DeferredBatchFailure(), HIGHEST_PRECEDENCE, true);
    }

    @Override
    public boolean matches(Method method, Class<?> targetClass) {
        Method specific = AopUtils.getMostSpecificMethod(method, targetClass);
        return AnnotatedElementUtils.hasAnnotation(specific, IdempotentBatch.class)
                || (!batchOnly && AnnotatedElementUtils.hasAnnotation(specific, Idempotent.class));
    }
}
