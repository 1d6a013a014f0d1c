package dev.idem.spring;

import dev.idem.ConfigurationException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

/**
 * Fails the startup on an {@link Idempotent} or {@link IdempotentBatch} method that Spring's proxy cannot intercept
 * (private, static or final): its calls would otherwise run unguarded, without a word.
 */
final class UnreachableIdempotentMethods implements BeanPostProcessor {
    private final Set<Class<?>> checked = ConcurrentHashMap.newKeySet();

    @Override
    public Object postProcessBeforeInitialization(Object bean, String beanName) {
        Class<?> type = ClassUtils.getUserClass(bean);
        if (!Proxy.isProxyClass(type) && checked.add(type)) { // a JDK proxy's methods are final, and not the user's
            ReflectionUtils.doWithMethods(type, UnreachableIdempotentMethods::check);
        }
        return bean;
    }

    private static void check(Method method) {
        boolean guarded = AnnotatedElementUtils.hasAnnotation(method, Idempotent.class)
                || AnnotatedElementUtils.hasAnnotation(method, IdempotentBatch.class);
        String modifier = guarded ? unreachable(method.getModifiers()) : null;
        if (modifier != null) {
            throw new ConfigurationException("@Idempotent on "
                    + method.getDeclaringClass().getName() + "."
                    + method.getName() + ", which is " + modifier + ": Spring's proxy cannot intercept it, so its"
                    + " calls would run unguarded. Make it a public method that is neither final nor static");
        }
    }

    private static @Nullable String unreachable(int modifiers) {
        if (Modifier.isPrivate(modifiers)) {
            return "private";
        }
        if (Modifier.isStatic(modifiers)) {
            return "static";
        }
        return Modifier.isFinal(modifiers) ? "final" : null;
    }
}
