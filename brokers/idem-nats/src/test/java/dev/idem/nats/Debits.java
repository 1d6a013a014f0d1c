package dev.idem.nats;

import dev.idem.Delivery;
import dev.idem.Guard;
import dev.idem.InMemoryStore;
import dev.idem.Outcome;
import dev.idem.jdbc.JdbcInbox;
import io.nats.client.Message;
import java.nio.charset.StandardCharsets;

/**
 * The proofs' effect: a message {@code account:amount} debits the account, guarded one of three ways. Each call of
 * {@link #handler} makes its own guard: share one handler between the consumers of one scenario.
 */
enum Debits {
    /** No guard: every copy debits. */
    UNGUARDED,
    /** {@link Guard} on an {@link InMemoryStore}: claim, debit, complete. */
    LEASE,
    /** {@link JdbcInbox} on PostgreSQL: the mark and the debit commit in one transaction. */
    INBOX;

    /** What a copy does while it holds the key (inside the guard), before the debit. */
    @FunctionalInterface
    interface Hold {
        Hold NONE = message -> {};

        void run(Message message) throws Exception;
    }

    /** A handler debiting {@code accountPrefix + account} for each message, guarded as this mode says. */
    MessageHandler handler(Bank bank, String namespace, String accountPrefix) {
        return handler(bank, namespace, accountPrefix, Hold.NONE);
    }

    /** The same, running {@code hold} before each debit. */
    MessageHandler handler(Bank bank, String namespace, String accountPrefix, Hold hold) {
        return switch (this) {
            case UNGUARDED ->
                (key, message) -> {
                    Debit d = Debit.of(message.getData(), accountPrefix);
                    hold.run(message);
                    bank.debit(d.account, d.amount, key);
                    return Outcome.processed();
                };
            case LEASE -> {
                Guard guard = Guard.of(InMemoryStore.create(), namespace);
                yield (key, message) -> {
                    Debit d = Debit.of(message.getData(), accountPrefix);
                    return guard.run(key, () -> {
                        hold.run(message);
                        bank.debit(d.account, d.amount, key);
                    });
                };
            }
            case INBOX -> {
                JdbcInbox inbox = JdbcInbox.builder(bank.database().dataSource())
                        .namespace(namespace)
                        .createTableIfMissing(true)
                        .build();
                yield (key, message) -> {
                    Debit d = Debit.of(message.getData(), accountPrefix);
                    return inbox.handle(Delivery.of(key), c -> {
                        hold.run(message);
                        bank.debit(c, d.account, d.amount, key);
                        return Outcome.processed();
                    });
                };
            }
        };
    }

    record Debit(String account, long amount) {
        static Debit of(byte[] data, String accountPrefix) {
            String[] parts = new String(data, StandardCharsets.UTF_8).split(":");
            return new Debit(accountPrefix + parts[0], Long.parseLong(parts[1]));
        }
    }
}
