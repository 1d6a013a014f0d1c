package dev.idem.spring;

import java.lang.reflect.Method;
import org.aopalliance.aop.Advice;
import org.springframework.aop.support.AopUtils;
import org.springframework.aop.support.StaticMethodMatcherPointcutAdvisor;
import org.springframework.core.annotation.AnnotatedElementUtils;

/**
 * Applies the {@link IdempotentInterceptor} to {@link Idempotent} methods. Its order is the lowest, like the
 * transaction advisor's, and it is registered after it, so it runs inside the method's transaction.
 */
final class IdempotentAdvisor extends StaticMethodMatcherPointcutAdvisor {
    private static final long serialVersionUID = 1L;

    IdempotentAdvisor(Advice interceptor) {
        super(interceptor);
        setOrder(LOWEST_PRECEDENCE);
    }

    @Override
    public boolean matches(Method method, Class<?> targetClass) {
        return AnnotatedElementUtils.hasAnnotation(
                AopUtils.getMostSpecificMethod(method, targetClass), Idempotent.class);
    }
}
