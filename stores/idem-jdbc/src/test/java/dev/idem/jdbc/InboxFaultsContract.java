package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.Delivery;
import dev.idem.IdempotencyKey;
import dev.idem.Outcome;
import dev.idem.spi.ClaimRequest;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The inbox under faults: errors, locks held by others, commits that fail, purge of crashed claims. A subclass per
 * database says which; database-specific faults live in the subclasses.
 */
abstract class InboxFaultsContract extends InboxFixture {

    /** Regression: an auto-commit pool's restore of auto-commit committed the marks of handlers that never ran. */
    @Test
    void error_inABatchHandler_commitsNothing_andTheRedeliveryRunsEveryMessage() throws SQLException {
        JdbcInbox inbox = inbox();

        assertThatThrownBy(() -> handleEach(
                        inbox,
                        message("a", null, pay("a", 1, 10)),
                        message("b", null, c -> {
                            throw new StackOverflowError("simulated crash");
                        }),
                        message("c", null, pay("c", 3, 30))))
                .isInstanceOf(StackOverflowError.class);

        assertThat(marks()).as("marks committed by the crash").isZero();
        assertThat(balance(1)).isEqualTo(INITIAL_BALANCE);
        assertThat(inbox.handle(Delivery.of("c"), pay("c", 3, 30)).type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(ledgerRows("c")).isEqualTo(1);
    }

    @Test
    void error_inASingleHandler_commitsNothing() throws SQLException {
        JdbcInbox inbox = inbox();

        assertThatThrownBy(() -> inbox.handle(Delivery.of("a"), c -> {
                    pay("a", 1, 10).handle(c);
                    throw new OutOfMemoryError("simulated");
                }))
                .isInstanceOf(OutOfMemoryError.class);

        assertThat(marks()).isZero();
        assertThat(ledgerRows("a")).isZero();
    }

    /** Regression: the rewrite of an expired mark had no query timeout and waited for the lock holder forever. */
    @Test
    @Timeout(30)
    void copy_ofAnExpiredMark_lockedByAnUncommittedTransaction_isInProgress_afterLockWait() throws Exception {
        JdbcInbox inbox = inboxBuilder()
                .retention(Duration.ofMinutes(1))
                .lockWait(Duration.ofSeconds(1))
                .build();
        inbox.handle(Delivery.of("p1"), pay("p1", 1, 10));
        clock.advance(Duration.ofMinutes(2));
        try (Connection holder = db.connection()) {
            holder.setAutoCommit(false);
            Statements.queryValue(
                    holder,
                    "SELECT state FROM idem_keys WHERE id = ? FOR UPDATE",
                    List.of(IdempotencyKey.of(namespace, "p1").storageId()));

            Outcome copy = inbox.handle(Delivery.of("p1"), pay("p1", 1, 10));

            assertThat(copy.type()).as("%s", copy).isEqualTo(Outcome.Type.IN_PROGRESS);
            holder.rollback();
        }
        assertThat(inbox.handle(Delivery.of("p1"), pay("p1", 1, 10)).type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(ledgerRows("p1")).isEqualTo(2);
    }

    /** Regression: a claim whose consumer crashed and whose message never came back stayed in the table forever. */
    @Test
    void purge_removesExpiredClaims_ofCrashedConsumers_andKeepsLiveOnes() throws SQLException {
        JdbcStore store = JdbcStore.builder(db.dataSource()).clock(clock).build();
        store.claim(ClaimRequest.of(IdempotencyKey.of(namespace, "crashed"), "o", Duration.ofMinutes(1)));
        store.claim(ClaimRequest.of(IdempotencyKey.of(namespace, "running"), "o", Duration.ofHours(1)));
        clock.advance(Duration.ofMinutes(2));

        store.purgeExpired();

        assertThat(queryLong("SELECT COUNT(*) FROM idem_keys WHERE id = '" + namespace + ":crashed'"))
                .isZero();
        assertThat(queryLong("SELECT COUNT(*) FROM idem_keys WHERE id = '" + namespace + ":running'"))
                .isEqualTo(1);
    }

    /** A handler whose outcome is final but whose effect the database refuses at commit. */
    protected TransactionalHandler refusedAtCommit(String paymentId) {
        throw new UnsupportedOperationException("this database has no commit-time check");
    }

    /** Whether {@link #refusedAtCommit} exists on this database (deferred constraints). */
    protected boolean refusesAtCommit() {
        return false;
    }

    /** Regression: a commit refused deterministically ended the whole batch IN_PROGRESS, again and again. */
    @Test
    void commitRefused_forOneMessageOfABatch_failsThatMessage_andTheRestIsApplied() throws SQLException {
        org.junit.jupiter.api.Assumptions.assumeTrue(refusesAtCommit(), "no commit-time constraint here");
        JdbcInbox inbox = inbox();

        List<Outcome> outcomes = handleEach(
                inbox,
                message("a", null, pay("a", 1, 10)),
                message("bad", null, refusedAtCommit("bad")),
                message("c", null, pay("c", 3, 30)),
                message("d", null, pay("d", 4, 40)));

        assertThat(outcomes)
                .extracting(Outcome::type)
                .containsExactly(
                        Outcome.Type.PROCESSED, Outcome.Type.FAILED, Outcome.Type.PROCESSED, Outcome.Type.PROCESSED);
        assertThat(outcomes.get(1).reason()).contains("commit");
        assertThat(ledgerRows("a") + ledgerRows("c") + ledgerRows("d")).isEqualTo(3);
        assertThat(ledgerRows("bad")).isZero();
        assertThat(inbox.handle(Delivery.of("a"), pay("a", 1, 10)).type()).isEqualTo(Outcome.Type.DUPLICATE);
        assertThat(inbox.handle(Delivery.of("bad"), pay("bad", 2, 20)).type()).isEqualTo(Outcome.Type.PROCESSED);
    }

    @Test
    void commitRefused_forASingleMessage_isFailed_notInProgress() throws SQLException {
        org.junit.jupiter.api.Assumptions.assumeTrue(refusesAtCommit(), "no commit-time constraint here");
        AtomicInteger runs = new AtomicInteger();
        Outcome outcome = inbox().handle(Delivery.of("bad"), c -> {
            runs.incrementAndGet();
            return refusedAtCommit("bad").handle(c);
        });

        assertThat(outcome.type()).as("%s", outcome).isEqualTo(Outcome.Type.FAILED);
        assertThat(runs).hasValue(1);
        assertThat(marks()).isZero();
    }
}
