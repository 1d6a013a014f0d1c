package dev.idem.spi;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.ConfigurationException;
import dev.idem.DeadLetterException;
import dev.idem.Outcome;
import dev.idem.RetryLaterException;
import dev.idem.StoreUnavailableException;
import java.io.IOException;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class FailureClassifierTest {
    private final FailureClassifier standard = FailureClassifier.standard();

    @Test
    void anyOtherException_isTheHandlersFailure() {
        IOException thrown = new IOException("payment service answered 503");

        Outcome outcome = standard.classify(thrown);

        assertThat(outcome.type()).isEqualTo(Outcome.Type.FAILED);
        assertThat(outcome.reason()).isEqualTo("handler threw java.io.IOException: payment service answered 503");
        assertThat(outcome.cause()).containsSame(thrown);
    }

    @ParameterizedTest
    @ValueSource(strings = {"08001", "08003", "08006", "08S01", "57P01", "57P02", "57P03"})
    void jdbcConnectionStates_areAnUnreachableDatabase(String sqlState) {
        Outcome outcome = standard.classify(new RuntimeException("wrapped", new SQLException("gone", sqlState)));

        assertThat(outcome.type()).isEqualTo(Outcome.Type.IN_PROGRESS);
        assertThat(outcome.reason()).startsWith("store or database unreachable: java.sql.SQLException: gone");
    }

    /** Seen on a shared PostgreSQL whose max_connections were taken: a connection cannot be had, the data is fine. */
    @Test
    void aPostgresOutOfConnections_isAnUnreachableDatabase() {
        Outcome outcome = standard.classify(new SQLException("FATAL: sorry, too many clients already", "53300"));

        assertThat(outcome.type()).isEqualTo(Outcome.Type.IN_PROGRESS);
    }

    @Test
    void aKilledMariaDbConnection_andThePoolsTimeout_areAnUnreachableDatabase() {
        assertThat(standard.classify(new SQLException("Connection was killed", "70100", 1927))
                        .type())
                .isEqualTo(Outcome.Type.IN_PROGRESS);
        assertThat(standard.classify(new SQLTransientConnectionException("pool timed out"))
                        .type())
                .isEqualTo(Outcome.Type.IN_PROGRESS);
    }

    /**
     * HikariCP, once a statement's error marked its connection broken (SQLState 08…, 57P01…), answers every later call
     * on it, the commit and rollback included, with this exception: no SQLState, no error code. Spring's
     * JdbcTransactionManager cannot translate it and throws {@code TransactionSystemException("JDBC commit failed")}
     * with it as the cause, nothing linked: seen as a FAILED retry in KafkaListenerFaultsTest's outage case, when the
     * session ended as the inbox released its savepoint.
     */
    @Test
    void aPoolsConnectionClosedUnderTheCaller_isAnUnreachableDatabase() {
        Outcome outcome = standard.classify(
                new IllegalStateException("JDBC commit failed", new SQLException("Connection is closed")));

        assertThat(outcome.type()).isEqualTo(Outcome.Type.IN_PROGRESS);
        assertThat(outcome.reason())
                .isEqualTo("store or database unreachable: java.sql.SQLException: Connection is closed");
    }

    /**
     * The stores (idem-jdbc's {@code SqlErrors}) and the delivery decision read a lost connection by this one rule;
     * they used to keep two lists, and these were FAILED (counted, dead-lettered at the bound) for the adapters.
     */
    @Test
    void everyWayADatabaseEndsTheSession_isAnUnreachableDatabase() {
        assertThat(List.of(
                        new SQLException("terminating connection due to idle-session timeout", "57P05"),
                        new SQLException("terminating connection because the database was dropped", "57P04"),
                        new SQLException("Database is already closed", "90098", 90098),
                        new SQLException("Connection is broken", "90067", 90067)))
                .allSatisfy(e -> {
                    assertThat(FailureClassifier.isLostConnection(e))
                            .as(e.getMessage())
                            .isTrue();
                    assertThat(standard.classify(new IllegalStateException("handler", e))
                                    .type())
                            .as(e.getMessage())
                            .isEqualTo(Outcome.Type.IN_PROGRESS);
                });
    }

    @Test
    void aSqlExceptionWithoutSqlState_thatSaysNothingOfTheConnection_isTheHandlersFailure() {
        assertThat(standard.classify(new SQLException("Connection is closed for business today", (String) null))
                        .type())
                .isEqualTo(Outcome.Type.FAILED);
        assertThat(standard.classify(new SQLException("Connection is closed", "42000"))
                        .type())
                .isEqualTo(Outcome.Type.FAILED);
    }

    @Test
    void aConstraintViolation_isTheHandlersFailure() {
        assertThat(standard.classify(new SQLException("duplicate key", "23505")).type())
                .isEqualTo(Outcome.Type.FAILED);
    }

    @Test
    void storeUnavailable_configuration_andRetryLater_areWaits() {
        assertThat(standard.classify(new StoreUnavailableException("redis", "down", null))
                        .type())
                .isEqualTo(Outcome.Type.IN_PROGRESS);
        assertThat(standard.classify(new ConfigurationException("table idem_inbox is missing"))
                        .type())
                .isEqualTo(Outcome.Type.IN_PROGRESS);
        assertThat(standard.classify(new RetryLaterException("commit fate unknown", null))
                        .type())
                .isEqualTo(Outcome.Type.IN_PROGRESS);
    }

    @Test
    void deadLetterException_deepInTheChain_isRejected() {
        Outcome outcome =
                standard.classify(new IllegalStateException("x", new DeadLetterException("bad amount", null)));

        assertThat(outcome.type()).isEqualTo(Outcome.Type.REJECTED);
        assertThat(outcome.reason()).isEqualTo("bad amount");
    }

    @Test
    void anError_isACrash_neverAFailureThatCounts() {
        Outcome outcome = standard.classify(new RuntimeException("listener failed", new OutOfMemoryError("heap")));

        assertThat(outcome.type()).isEqualTo(Outcome.Type.IN_PROGRESS);
        assertThat(outcome.reason()).contains("OutOfMemoryError");
    }

    @Test
    void aRollbackFailureThatReplacedARetryLater_isClassifiedByTheLinkedException() {
        FailureClassifier spring = FailureClassifier.builder()
                .links(RollbackFailed.class, RollbackFailed::applicationException)
                .build();
        RollbackFailed thrown = new RollbackFailed(new RetryLaterException("inbox: retry later", null));

        assertThat(standard.classify(thrown).type()).isEqualTo(Outcome.Type.FAILED);
        assertThat(spring.classify(thrown).type()).isEqualTo(Outcome.Type.IN_PROGRESS);
    }

    @Test
    void aSuppressedConnectionError_makesTheFailureAWait() {
        IllegalStateException thrown = new IllegalStateException("rollback failed");
        thrown.addSuppressed(new SQLException("I/O error", "08006"));

        assertThat(standard.classify(thrown).type()).isEqualTo(Outcome.Type.IN_PROGRESS);
    }

    @Test
    void registeredTypes_areUnreachable_rejections_orCarryTheirOutcome() {
        FailureClassifier classifier = FailureClassifier.builder()
                .unreachable(CannotBegin.class)
                .rejection(Unconvertible.class)
                .carries(Carrying.class, Carrying::outcome)
                .build();

        assertThat(classifier.classify(new CannotBegin()).type()).isEqualTo(Outcome.Type.IN_PROGRESS);
        assertThat(classifier.classify(new Unconvertible()).type()).isEqualTo(Outcome.Type.REJECTED);
        assertThat(classifier.classify(new RuntimeException(new Carrying(Outcome.outOfOrder("no order")))))
                .isEqualTo(Outcome.outOfOrder("no order"));
    }

    @Test
    void anUnreachableDatabaseBehindACarriedFailure_isStillAWait() {
        FailureClassifier classifier = FailureClassifier.builder()
                .carries(Carrying.class, Carrying::outcome)
                .build();
        SQLException closed = new SQLException("Connection is closed", "08003");
        Carrying thrown = new Carrying(Outcome.failed("handler threw", closed));
        thrown.initCause(closed);

        assertThat(classifier.classify(thrown).type()).isEqualTo(Outcome.Type.IN_PROGRESS);
    }

    @Test
    void aCauseCycle_isReadOnce() {
        CyclicException a = new CyclicException();
        CyclicException b = new CyclicException();
        a.initCause(b);
        b.initCause(a);

        assertThat(standard.classify(a).type()).isEqualTo(Outcome.Type.FAILED);
    }

    private static final class RollbackFailed extends RuntimeException {
        private final Throwable application;

        RollbackFailed(Throwable application) {
            super("rollback failed: Connection is closed");
            this.application = application;
        }

        @Nullable
        Throwable applicationException() {
            return application;
        }
    }

    private static final class CannotBegin extends RuntimeException {}

    private static final class Unconvertible extends RuntimeException {}

    private static final class CyclicException extends RuntimeException {}

    private static final class Carrying extends RuntimeException {
        private final transient Outcome outcome;

        Carrying(Outcome outcome) {
            this.outcome = outcome;
        }

        Outcome outcome() {
            return outcome;
        }
    }
}
