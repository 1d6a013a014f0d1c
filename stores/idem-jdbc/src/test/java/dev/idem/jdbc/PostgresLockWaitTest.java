package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.idem.Delivery;
import dev.idem.Guard;
import dev.idem.Outcome;
import dev.idem.testsupport.TestDatabase;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Issue 24: PostgreSQL's driver carries a query timeout out with a {@code java.util.Timer} task per execution, whose
 * thread it wakes for each one: much of the single inbox's JVM time over a hand-written dedup insert. The inbox's
 * and the lease store's statements bound their lock wait through the {@link StatementWatcher} there, and give the
 * driver no query timeout. (That the bound still holds: {@code copy_whileFirstHoldsTheKeyLongerThanLockWait_isInProgress}
 * and {@code copy_ofAnExpiredMark_lockedByAnUncommittedTransaction_isInProgress_afterLockWait} of the inbox's suites,
 * {@code claim_ofARowAHandlersTransactionKeepsLocked_isInProgress_afterABoundedWait} of the store's.)
 */
class PostgresLockWaitTest {
    private static TestDatabase postgres;

    @BeforeAll
    static void open() {
        postgres = TestDatabase.postgres("PostgresLockWaitTest");
    }

    @AfterAll
    static void close() {
        postgres.close();
    }

    @Test
    void theInboxAndTheLeaseStore_giveTheDriverNoQueryTimeout() {
        try (HikariDataSource pool = postgres.countedPool(true)) {
            TimeoutRecorder recorder = new TimeoutRecorder(pool);
            JdbcInbox inbox = JdbcInbox.builder(recorder.dataSource())
                    .namespace("lock-wait")
                    .createTableIfMissing(true)
                    .build();
            JdbcStore store = JdbcStore.builder(recorder.dataSource())
                    .createTableIfMissing(true)
                    .build();

            assertThat(inbox.handle(Delivery.of("p1"), c -> Outcome.processed()).type())
                    .isEqualTo(Outcome.Type.PROCESSED);
            assertThat(inbox.handle(Delivery.of("p1"), c -> Outcome.processed()).type())
                    .isEqualTo(Outcome.Type.DUPLICATE);
            assertThat(inbox.handleBatch(
                            List.of(Delivery.of("b1"), Delivery.of("b2"), Delivery.of("p1")),
                            (c, fresh) ->
                                    fresh.stream().map(d -> Outcome.processed()).toList()))
                    .extracting(Outcome::type)
                    .containsExactly(Outcome.Type.PROCESSED, Outcome.Type.PROCESSED, Outcome.Type.DUPLICATE);
            try (Guard guard =
                    Guard.builder(store).namespace("lock-wait").watchdog(false).build()) {
                assertThat(guard.handle(Delivery.of("g1"), ctx -> Outcome.processed())
                                .type())
                        .isEqualTo(Outcome.Type.PROCESSED);
                assertThat(guard.handle(Delivery.of("g2"), ctx -> {
                                    throw new IllegalStateException("released");
                                })
                                .type())
                        .isEqualTo(Outcome.Type.FAILED);
                assertThat(guard.handle(Delivery.of("g1"), ctx -> Outcome.processed())
                                .type())
                        .isEqualTo(Outcome.Type.DUPLICATE);
            }

            assertThat(recorder.timeouts).as("statements given a query timeout").isEmpty();
        }
    }

    /** A data source whose statements record each query timeout they are given, with their text. */
    private static final class TimeoutRecorder {
        final Queue<String> timeouts = new ConcurrentLinkedQueue<>();
        private final DataSource dataSource;

        TimeoutRecorder(DataSource target) {
            dataSource = (DataSource) proxy(DataSource.class, target, "");
        }

        DataSource dataSource() {
            return dataSource;
        }

        private Object proxy(Class<?> type, Object target, String sql) {
            return Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {type}, (self, method, args) -> {
                if (method.getName().equals("setQueryTimeout")) {
                    timeouts.add(args[0] + " s: " + sql);
                }
                Object result;
                try {
                    result = method.invoke(target, args);
                } catch (InvocationTargetException e) {
                    throw e.getCause();
                }
                String text = args != null && args.length > 0 && args[0] instanceof String given ? given : "";
                if (result instanceof Connection c && method.getName().equals("getConnection")) {
                    return proxy(Connection.class, c, "");
                }
                if (result instanceof Statement s && target instanceof Connection) {
                    return proxy(s instanceof PreparedStatement ? PreparedStatement.class : Statement.class, s, text);
                }
                return result;
            });
        }
    }
}
