package dev.idem.testsupport;

import static org.awaitility.Awaitility.await;

import dev.idem.Guard;
import dev.idem.InMemoryStore;
import dev.idem.Outcome;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The broker proofs' business effect, {@link PaymentBank#debit}, as one guard runs it, so that each duplicate-cause
 * scenario is written once and runs with the unguarded baseline, a lease guard ({@link #lease}) and a transactional
 * inbox ({@link #inTransaction}: the broker tests pass their {@code JdbcInbox}, which this module cannot depend on).
 *
 * <p>A scenario that needs a real race passes a {@link Hold}: it runs while this copy holds the key (before the
 * debit) and can wait there until another copy of the key has met it. One instance per scenario and key.
 */
public abstract class DebitGuard implements AutoCloseable {

    /**
     * A guard that runs {@code work} in a database transaction of its own together with the key's mark, as {@code
     * (key, work) -> jdbcInbox.handle(Delivery.of(key), work::run)}.
     */
    @FunctionalInterface
    public interface Inbox {
        Outcome handle(String key, Work work);
    }

    /** What an {@link Inbox} runs in its transaction. */
    @FunctionalInterface
    public interface Work {
        Outcome run(Connection connection) throws Exception;
    }

    /** What a copy does while it holds the key, before the debit. */
    @FunctionalInterface
    public interface Hold {
        Hold NONE = claim -> {};

        void run(Claim claim) throws Exception;
    }

    /** The key as held by one copy. */
    @FunctionalInterface
    public interface Claim {
        /** Returns once another copy of the key has met this one: found it in progress, or waits on it. */
        void awaitContender() throws Exception;
    }

    private static final Duration WAIT = Duration.ofSeconds(60);

    private final PaymentBank bank;
    private final AtomicInteger contentions = new AtomicInteger();

    private DebitGuard(PaymentBank bank) {
        this.bank = bank;
    }

    /** No guard: every copy debits. A copy's contender is any other copy that reaches the debit. */
    public static DebitGuard unguarded(PaymentBank bank) {
        return new Unguarded(bank);
    }

    /** {@link Guard} on an {@link InMemoryStore}: claim, debit, complete; a second copy meets IN_PROGRESS. */
    public static DebitGuard lease(PaymentBank bank, String namespace) {
        return new Lease(bank, namespace);
    }

    /**
     * {@code inbox}: the mark, the debit and the ledger row commit in one transaction on the inbox's connection; a
     * second copy waits on the uncommitted mark, then answers DUPLICATE.
     */
    public static DebitGuard inTransaction(PaymentBank bank, Inbox inbox) {
        return new InTransaction(bank, inbox);
    }

    public PaymentBank bank() {
        return bank;
    }

    /** Debits {@code amount} from {@code account} for the message {@code key}, as this guard allows. */
    public abstract Outcome debit(String key, String account, long amount, Hold hold) throws Exception;

    public Outcome debit(String key, String account, long amount) throws Exception {
        return debit(key, account, amount, Hold.NONE);
    }

    /** How many times a copy met another copy that held the key. */
    public int contentions() {
        return contentions.get();
    }

    final void contended() {
        contentions.incrementAndGet();
    }

    @Override
    public void close() {}

    private static void awaitLatch(CountDownLatch latch, String failure) throws InterruptedException {
        if (!latch.await(WAIT.toSeconds(), TimeUnit.SECONDS)) {
            throw new AssertionError(failure);
        }
    }

    private static final class Unguarded extends DebitGuard {
        private final CountDownLatch twoCopies = new CountDownLatch(2);

        Unguarded(PaymentBank bank) {
            super(bank);
        }

        @Override
        public Outcome debit(String key, String account, long amount, Hold hold) throws Exception {
            twoCopies.countDown();
            hold.run(() -> awaitLatch(twoCopies, "no second copy of " + key + " reached the debit"));
            bank().debit(account, amount, key);
            return Outcome.processed();
        }
    }

    private static final class Lease extends DebitGuard {
        private final Guard guard;
        private final CountDownLatch metInProgress = new CountDownLatch(1);

        Lease(PaymentBank bank, String namespace) {
            super(bank);
            this.guard = Guard.of(InMemoryStore.create(), namespace);
        }

        @Override
        public Outcome debit(String key, String account, long amount, Hold hold) {
            Outcome outcome = guard.run(key, () -> {
                hold.run(() -> awaitLatch(metInProgress, "no second copy of " + key + " met the claim"));
                bank().debit(account, amount, key);
            });
            if (outcome.type() == Outcome.Type.IN_PROGRESS) {
                contended();
                metInProgress.countDown();
            }
            return outcome;
        }

        @Override
        public void close() {
            guard.close();
        }
    }

    private static final class InTransaction extends DebitGuard {
        private final Inbox inbox;

        InTransaction(PaymentBank bank, Inbox inbox) {
            super(bank);
            this.inbox = inbox;
        }

        @Override
        public Outcome debit(String key, String account, long amount, Hold hold) {
            return inbox.handle(key, connection -> {
                hold.run(() -> awaitBlockedOn(connection));
                PaymentBank.debit(connection, account, amount, key);
                return Outcome.processed();
            });
        }

        /** Waits until another database session is blocked by this transaction: the other copy's mark insert. */
        private void awaitBlockedOn(Connection connection) throws SQLException {
            long pid;
            try (Statement s = connection.createStatement();
                    ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
                rs.next();
                pid = rs.getLong(1);
            }
            await().atMost(WAIT).until(() -> bank().sessionsBlockedBy(pid) > 0);
            contended();
        }
    }
}
