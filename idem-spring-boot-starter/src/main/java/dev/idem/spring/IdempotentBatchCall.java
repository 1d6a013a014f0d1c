package dev.idem.spring;

import dev.idem.ConfigurationException;
import dev.idem.Delivery;
import dev.idem.HandlingContext;
import dev.idem.Outcome;
import dev.idem.jdbc.JdbcInbox;
import java.lang.reflect.Method;
import java.lang.reflect.UndeclaredThrowableException;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import javax.sql.DataSource;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.springframework.aop.ProxyMethodInvocation;
import org.springframework.expression.spel.support.StandardEvaluationContext;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.util.ClassUtils;

/** One call of an {@link IdempotentBatch} method, inside the transaction: see the annotation for what it does. */
final class IdempotentBatchCall {
    private static final boolean SPRING_KAFKA = ClassUtils.isPresent(
            "org.springframework.kafka.listener.BatchListenerFailedException",
            IdempotentBatchCall.class.getClassLoader());

    private final IdempotentMethod m;
    private final int listParameter;
    private final MethodInvocation invocation;
    private final Object[] arguments;
    private final List<?> batch;

    private IdempotentBatchCall(IdempotentMethod m, int listParameter, MethodInvocation invocation) {
        this.m = m;
        this.listParameter = listParameter;
        this.invocation = invocation;
        this.arguments = invocation.getArguments();
        List<?> list = (List<?>) arguments[listParameter];
        this.batch = list == null ? List.of() : list;
    }

    /** The position of the batch parameter of {@code method}; refuses a method that is not a batch method. */
    static int listParameter(Method method) {
        Class<?>[] types = method.getParameterTypes();
        int found = -1;
        for (int i = 0; i < types.length; i++) {
            if (List.class.equals(types[i])) {
                if (found >= 0) {
                    found = -2;
                    break;
                }
                found = i;
            }
        }
        if (found < 0 || method.getReturnType() != void.class) {
            throw new ConfigurationException(
                    "@IdempotentBatch on " + method.getDeclaringClass().getName() + "." + method.getName()
                            + " needs exactly one java.util.List parameter (the batch) and a void return");
        }
        return found;
    }

    static @Nullable Object run(IdempotentGuards guards, IdempotentMethod m, int listParameter, MethodInvocation inv)
            throws Throwable {
        return new IdempotentBatchCall(m, listParameter, inv).run(guards);
    }

    private @Nullable Object run(IdempotentGuards guards) throws Throwable {
        DataSource ds = guards.dataSource();
        if (ds == null || !IdempotentInterceptor.inTransaction(ds, "@IdempotentBatch on " + m.where())) {
            throw new ConfigurationException("@IdempotentBatch on " + m.where() + " was called outside a transaction"
                    + " of the application's DataSource: put @Transactional on it, so that every mark commits with"
                    + " the batch's writes");
        }
        Outcome[] outcomes = new Outcome[batch.size()];
        List<Delivery> deliveries = new ArrayList<>();
        List<Integer> positions = new ArrayList<>();
        for (int i = 0; i < batch.size(); i++) {
            Object element = batch.get(i);
            try {
                StandardEvaluationContext context = m.context(element == null ? this : element, arguments);
                context.setVariable("element", element);
                deliveries.add(Delivery.of(m.key(context), m.fingerprint(context)));
                positions.add(i);
            } catch (RuntimeException e) { // SpEL rethrows a called method's RuntimeException unwrapped
                outcomes[i] = Outcome.rejected(
                        "the key or fingerprint expression failed on element " + i + ": " + e.getMessage(), e);
            }
        }
        JdbcInbox inbox = guards.inbox(m.namespace());
        Connection connection = DataSourceUtils.getConnection(ds);
        List<Outcome> answered;
        try {
            answered = inbox.handleBatch(connection, deliveries, (c, fresh) -> callWith(fresh, positions));
        } finally {
            DataSourceUtils.releaseConnection(connection, ds);
        }
        for (int j = 0; j < answered.size(); j++) {
            outcomes[positions.get(j)] = answered.get(j);
        }
        for (int i = 0; i < outcomes.length; i++) {
            if (!outcomes[i].isFinal()) {
                DeferredBatchFailure.defer(failedAt(i, cause(outcomes[i])));
                return null;
            }
        }
        return null;
    }

    /** Calls the method with the new elements of {@code fresh}, in their order; answers PROCESSED for each. */
    private List<Outcome> callWith(List<HandlingContext> fresh, List<Integer> positions) throws Exception {
        if (fresh.isEmpty()) {
            return List.of();
        }
        List<Object> elements = new ArrayList<>(fresh.size());
        for (HandlingContext context : fresh) {
            elements.add(batch.get(positions.get(context.index())));
        }
        Object[] callArguments = arguments.clone();
        callArguments[listParameter] = Collections.unmodifiableList(elements);
        if (!(invocation instanceof ProxyMethodInvocation proxied)) {
            throw new IllegalStateException("@IdempotentBatch needs Spring AOP's method invocation, got " + invocation);
        }
        try {
            proxied.invocableClone(callArguments).proceed();
        } catch (Exception | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new UndeclaredThrowableException(t);
        }
        return Collections.nCopies(fresh.size(), Outcome.processed());
    }

    /** What the caller is told about an element that was not applied: the method's own exception, or Idem's. */
    private Exception cause(Outcome outcome) {
        Throwable own = outcome.cause().orElse(null);
        if (outcome.type() == Outcome.Type.FAILED && own instanceof Exception e) {
            return e;
        }
        return outcome.type() == Outcome.Type.REJECTED
                ? new IdempotentRejectedException(m.namespace(), outcome)
                : IdempotentRetryLaterException.of(m.namespace(), outcome);
    }

    private static RuntimeException failedAt(int index, Exception cause) {
        if (SPRING_KAFKA) {
            return dev.idem.spring.kafka.IdempotentBatches.failedAt(index, cause);
        }
        return cause instanceof RuntimeException r ? r : new UndeclaredThrowableException(cause);
    }
}
