package dev.idem.spring;

import dev.idem.ConfigurationException;
import dev.idem.Delivery;
import dev.idem.Guard;
import dev.idem.Outcome;
import dev.idem.jdbc.JdbcInbox;
import java.lang.reflect.Method;
import java.lang.reflect.UndeclaredThrowableException;
import java.sql.Connection;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.springframework.aop.support.AopUtils;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.expression.EvaluationContext;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Runs {@link Idempotent} methods through their namespace's guard: the inbox on the transaction's own connection when
 * a Spring transaction holds a connection of the application's data source, else the lease guard. See {@link
 * Idempotent} for what each outcome does.
 */
final class IdempotentInterceptor implements MethodInterceptor {
    private final IdempotentGuards guards;
    private final IdempotentObserver observer;
    private final Function<Method, IdempotentMethod> parse;
    private final Map<Method, IdempotentMethod> methods = new ConcurrentHashMap<>();
    private final Function<Method, BatchMethod> parseBatch;
    private final Map<Method, BatchMethod> batchMethods = new ConcurrentHashMap<>();

    /** An {@link IdempotentBatch} method and the position of its list. */
    private record BatchMethod(IdempotentMethod method, int listParameter) {}

    IdempotentInterceptor(
            IdempotentGuards guards,
            IdempotentObserver observer,
            @Nullable String defaultNamespace,
            ResultCodec codec) {
        this.guards = guards;
        this.observer = observer;
        this.parse = method -> new IdempotentMethod(
                method,
                Objects.requireNonNull(AnnotatedElementUtils.findMergedAnnotation(method, Idempotent.class)),
                defaultNamespace,
                codec);
        this.parseBatch = method -> new BatchMethod(
                new IdempotentMethod(
                        method,
                        Objects.requireNonNull(
                                AnnotatedElementUtils.findMergedAnnotation(method, IdempotentBatch.class)),
                        defaultNamespace,
                        codec),
                IdempotentBatchCall.listParameter(method));
    }

    @Override
    public @Nullable Object invoke(MethodInvocation invocation) throws Throwable {
        Object target = Objects.requireNonNull(invocation.getThis(), "@Idempotent guards methods of beans");
        Method method = AopUtils.getMostSpecificMethod(invocation.getMethod(), target.getClass());
        if (AnnotatedElementUtils.hasAnnotation(method, IdempotentBatch.class)) {
            BatchMethod batch = batchMethods.computeIfAbsent(method, parseBatch);
            return IdempotentBatchCall.run(guards, batch.method(), batch.listParameter(), invocation);
        }
        IdempotentMethod m = methods.computeIfAbsent(method, parse);
        String key;
        String fingerprint;
        try {
            EvaluationContext context = m.context(target, invocation.getArguments());
            key = m.key(context);
            fingerprint = m.fingerprint(context);
        } catch (RuntimeException e) { // SpEL rethrows a called method's RuntimeException unwrapped
            throw new IdempotentRejectedException(
                    m.namespace(),
                    Outcome.rejected("the key or fingerprint expression failed on this message: " + e.getMessage(), e));
        }
        Call call = new Call(invocation, m.codec());
        DataSource ds = guards.dataSource();
        if (ds != null && inTransaction(ds, "@Idempotent on " + m.where())) {
            JdbcInbox inbox = guards.inbox(m.namespace());
            return observed(m, "inbox", inbox.describe(), call, () -> joined(inbox, key, fingerprint, call));
        }
        if (TransactionSynchronizationManager.isActualTransactionActive()) {
            throw new ConfigurationException("@Idempotent on " + m.where() + " was called inside a transaction that"
                    + " holds no connection of the inbox's DataSource: the lease would record the message as applied"
                    + " before that transaction commits, and a rollback would then lose it. Run it in a transaction"
                    + " of the application's DataSource (the one the inbox uses), or call it outside the"
                    + " transaction");
        }
        Guard guard = leaseGuard(m);
        return observed(
                m,
                "lease",
                guards.leaseStoreDescription(),
                call,
                () -> guard.handle(Delivery.of(key, fingerprint), ctx -> call.run()));
    }

    private @Nullable Object observed(
            IdempotentMethod m, String guardKind, String store, Call call, Supplier<Outcome> guarded) throws Throwable {
        IdempotentObserver.Handling handling = observer.start(m.namespace(), guardKind, store);
        try {
            Outcome outcome = guarded.get();
            handling.outcome(outcome);
            return call.answer(m, outcome);
        } catch (Throwable t) {
            handling.error(t);
            throw t;
        } finally {
            handling.stop();
        }
    }

    /**
     * Whether a Spring transaction holds a connection of {@code ds} on this thread.
     *
     * @throws ConfigurationException when that transaction is read-only: the mark is a write
     */
    static boolean inTransaction(DataSource ds, String guarded) {
        boolean joined = TransactionSynchronizationManager.isActualTransactionActive()
                && TransactionSynchronizationManager.hasResource(ds);
        if (joined && TransactionSynchronizationManager.isCurrentTransactionReadOnly()) {
            throw new ConfigurationException(guarded + " was called in a readOnly transaction, where its dedup mark"
                    + " cannot be written (PostgreSQL refuses the insert, on every redelivery again): remove"
                    + " readOnly = true from its @Transactional");
        }
        return joined;
    }

    private Outcome joined(JdbcInbox inbox, String key, @Nullable String fingerprint, Call call) {
        DataSource ds = Objects.requireNonNull(guards.dataSource(), "a joined call needs the application's DataSource");
        Connection connection = DataSourceUtils.getConnection(ds);
        try {
            return inbox.handle(connection, Delivery.of(key, fingerprint), c -> call.run());
        } finally {
            DataSourceUtils.releaseConnection(connection, ds);
        }
    }

    private Guard leaseGuard(IdempotentMethod m) {
        Guard guard = guards.guard(m.namespace());
        if (guard == null) {
            throw new ConfigurationException("@Idempotent method in namespace '" + m.namespace()
                    + "' was called outside a transaction of the application's DataSource and there is no lease"
                    + " store: call it inside @Transactional, or configure idem.redis.uri (or a Redis connection),"
                    + " or enable the database lease store (idem.jdbc.lease-store=true)");
        }
        return guard;
    }

    /** One invocation of the method: runs it at most once and remembers what it returned or threw. */
    private static final class Call {
        private final MethodInvocation invocation;
        private final ResultCodec codec;
        private boolean ran;
        private @Nullable Object result;
        private @Nullable Throwable thrown;

        Call(MethodInvocation invocation, ResultCodec codec) {
            this.invocation = invocation;
            this.codec = codec;
        }

        Outcome run() throws Exception {
            ran = true;
            try {
                result = invocation.proceed();
            } catch (Exception | Error e) {
                thrown = e;
                throw e;
            } catch (Throwable t) {
                thrown = t;
                throw new UndeclaredThrowableException(t);
            }
            return Outcome.processed(codec.encode(result));
        }

        @Nullable
        Object answer(IdempotentMethod m, Outcome outcome) throws Throwable {
            if (thrown != null) {
                throw thrown;
            }
            return switch (outcome.type()) {
                case PROCESSED -> result;
                case DUPLICATE -> ran ? result : codec.decode(outcome.result().orElse(null), m.returnType());
                case IN_PROGRESS, OUT_OF_ORDER, FAILED ->
                    throw IdempotentRetryLaterException.of(m.namespace(), outcome);
                case REJECTED -> throw new IdempotentRejectedException(m.namespace(), outcome);
            };
        }
    }
}
