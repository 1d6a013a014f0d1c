package dev.idem.spring.internal;

import dev.idem.spring.Idempotent;
import dev.idem.spring.IdempotentBatch;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import org.aopalliance.intercept.MethodInterceptor;
import org.jspecify.annotations.Nullable;
import org.springframework.aop.framework.AopConfigException;
import org.springframework.aop.framework.ProxyFactory;
import org.springframework.aop.support.AopUtils;
import org.springframework.aop.support.NameMatchMethodPointcutAdvisor;
import org.springframework.core.annotation.AnnotatedElementUtils;

/**
 * What the Kafka and Rabbit integrations share to check each listener container a factory creates: the factory wrapped
 * so that its {@code createListenerContainer} passes through a check, and which listener methods are guarded. Not
 * part of the API.
 */
public final class ListenerContainerChecks {
    private static final System.Logger LOG = System.getLogger(ListenerContainerChecks.class.getName());

    private ListenerContainerChecks() {}

    /**
     * {@code factory}, every container it creates passed through {@code check}; or {@code factory} itself, unchecked and
     * with a warning that names {@code unchecked}, when a subclass of it cannot stand in for it: its class is final or
     * not visible, or it has a final method (called on the proxy, that method would read the proxy's own empty fields).
     */
    public static Object around(Object factory, MethodInterceptor check, String unchecked) {
        Class<?> type = factory.getClass();
        String unproxyable = finalMethodOf(type);
        if (unproxyable == null) {
            ProxyFactory proxy = new ProxyFactory(factory);
            proxy.setProxyTargetClass(true);
            NameMatchMethodPointcutAdvisor advisor = new NameMatchMethodPointcutAdvisor(check);
            advisor.setMappedName("createListenerContainer");
            proxy.addAdvisor(advisor);
            try {
                return proxy.getProxy(type.getClassLoader());
            } catch (AopConfigException e) {
                unproxyable = e.getMessage();
            }
        }
        LOG.log(
                System.Logger.Level.WARNING,
                "{0} of container factory {1} is not checked: {2}",
                unchecked,
                type.getName(),
                unproxyable);
        return factory;
    }

    /** Whether {@code method} of {@code bean} is {@link Idempotent} or {@link IdempotentBatch}. */
    public static boolean guarded(Method method, @Nullable Object bean) {
        Method specific = specific(method, bean);
        return AnnotatedElementUtils.hasAnnotation(specific, Idempotent.class)
                || AnnotatedElementUtils.hasAnnotation(specific, IdempotentBatch.class);
    }

    /** {@code method} as declared on {@code bean}'s own class, where its annotations are. */
    public static Method specific(Method method, @Nullable Object bean) {
        return bean == null ? method : AopUtils.getMostSpecificMethod(method, AopUtils.getTargetClass(bean));
    }

    private static @Nullable String finalMethodOf(Class<?> type) {
        for (Class<?> c = type; c != null && c != Object.class; c = c.getSuperclass()) {
            for (Method m : c.getDeclaredMethods()) {
                int modifiers = m.getModifiers();
                if (Modifier.isFinal(modifiers) && !Modifier.isStatic(modifiers) && !Modifier.isPrivate(modifiers)) {
                    return "its method " + m + " is final";
                }
            }
        }
        return null;
    }
}
