package dev.idem.kafka;

import static dev.idem.kafka.KafkaFixture.WAIT;
import static org.awaitility.Awaitility.await;

import dev.idem.Delivery;
import dev.idem.Guard;
import dev.idem.InMemoryStore;
import dev.idem.Outcome;
import dev.idem.jdbc.JdbcInbox;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The proofs' business effect, {@link KafkaFixture.Bank#debit}, as one guard runs it, so that each duplicate-cause
 * scenario is written once and runs with the unguarded baseline and with every {@link Kind} of guard.
 *
 * <p>A scenario that needs a real race passes a {@link Hold}: it runs while this copy holds the key (before the
 * debit) and can wait there until another copy of the key has met it. One instance per scenario and key.
 */
abstract class DebitGuard implements AutoCloseable {

    /** The guards the duplicate-cause proofs run with. */
    enum Kind {
        /** {@link Guard} on an {@link InMemoryStore}: claim, debit, complete; a second copy meets IN_PROGRESS. */
        LEASE,
        /**
         * {@link JdbcInbox}: the mark, the debit and the ledger row commit in one transaction on the inbox's
         * connection; a second copy waits on the uncommitted mark, then answers DUPLICATE.
         */
        INBOX;

        DebitGuard open(KafkaFixture.Bank bank, String namespace) {
            return switch (this) {
                case LEASE -> new Lease(bank, namespace);
                case INBOX -> new Inbox(bank, namespace);
            };
        }
    }

    /** What a copy does while it holds the key, before the debit. */
    @FunctionalInterface
    interface Hold {
        Hold NONE = claim -> {};

        void run(Claim claim) throws Exception;
    }

    /** The key as held by one copy. */
    @FunctionalInterface
    interface Claim {
        /** Returns once another copy of the key has met this one: found it in progress, or waits on it. */
        void awaitContender() throws Exception;
    }

    final KafkaFixture.Bank bank;
    private final AtomicInteger contentions = new AtomicInteger();

    private DebitGuard(KafkaFixture.Bank bank) {
        this.bank = bank;
    }

    /** No guard: every copy debits. A copy's contender is any other copy that reaches the debit. */
    static DebitGuard unguarded(KafkaFixture.Bank bank) {
        return new Unguarded(bank);
    }

    /** Debits {@code amount} from {@code account} for the message {@code key}, as this guard allows. */
    abstract Outcome debit(String key, String account, long amount, Hold hold) throws Exception;

    Outcome debit(String key, String account, long amount) throws Exception {
        return debit(key, account, amount, Hold.NONE);
    }

    /** How many times a copy met another copy that held the key. */
    int contentions() {
        return contentions.get();
    }

    void contended() {
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

        Unguarded(KafkaFixture.Bank bank) {
            super(bank);
        }

        @Override
        Outcome debit(String key, String account, long amount, Hold hold) throws Exception {
            twoCopies.countDown();
            hold.run(() -> awaitLatch(twoCopies, "no second copy of " + key + " reached the debit"));
            bank.debit(account, amount, key);
            return Outcome.processed();
        }
    }

    private static final class Lease extends DebitGuard {
        private final Guard guard;
        private final CountDownLatch metInProgress = new CountDownLatch(1);

        Lease(KafkaFixture.Bank bank, String namespace) {
            super(bank);
            this.guard = Guard.of(InMemoryStore.create(), namespace);
        }

        @Override
        Outcome debit(String key, String account, long amount, Hold hold) {
            Outcome outcome = guard.run(key, () -> {
                hold.run(() -> awaitLatch(metInProgress, "no second copy of " + key + " met the claim"));
                bank.debit(account, amount, key);
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

    private static final class Inbox extends DebitGuard {
        private final JdbcInbox inbox;

        Inbox(KafkaFixture.Bank bank, String namespace) {
            super(bank);
            this.inbox = JdbcInbox.builder(bank.database().dataSource())
                    .namespace(namespace)
                    .createTableIfMissing(true)
                    .build();
        }

        @Override
        Outcome debit(String key, String account, long amount, Hold hold) {
            return inbox.handle(Delivery.of(key), connection -> {
                hold.run(() -> awaitBlockedOn(connection));
                bank.debit(connection, account, amount, key);
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
            await().atMost(WAIT).until(() -> bank.sessionsBlockedBy(pid) > 0);
            contended();
        }
    }
}
