package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Delivery;
import dev.idem.Fingerprint;
import dev.idem.Guard;
import dev.idem.HandlingContext;
import dev.idem.Outcome;
import dev.idem.testsupport.ReadmeSnippets;
import dev.idem.testsupport.TestDatabase;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

class ReadmeJdbcExampleTest {
    private static final Path SOURCE = Path.of("src/test/java/dev/idem/jdbc/ReadmeJdbcExampleTest.java");

    record Message(String key, byte[] body, long amount, long accountId) {}

    private final List<Message> mails = new ArrayList<>();
    private final Mailer mailer = mails::add;

    interface Mailer {
        void send(Message message);
    }

    @Test
    void readmeInboxExample_compilesRuns_andIsShownVerbatim() throws SQLException {
        try (TestDatabase db = TestDatabase.h2("ReadmeJdbcExampleTest")) {
            db.execute("CREATE TABLE account (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL)");
            db.execute("INSERT INTO account VALUES (7, 100)");
            JdbcInbox.builder(db.dataSource())
                    .createTableIfMissing(true)
                    .namespace("setup")
                    .build();
            Message message = new Message("pay-1", new byte[] {1}, 30, 7);

            List<Outcome.Type> outcomes = new ArrayList<>();
            for (int delivery = 0; delivery < 2; delivery++) {
                outcomes.add(inbox(db.dataSource(), message).type());
            }

            assertThat(outcomes).containsExactly(Outcome.Type.PROCESSED, Outcome.Type.DUPLICATE);
            try (Connection c = db.connection();
                    ResultSet rs = c.createStatement().executeQuery("SELECT balance FROM account")) {
                rs.next();
                assertThat(rs.getLong(1)).isEqualTo(70);
            }
        }
        ReadmeSnippets.assertShown(SOURCE, "inbox");
    }

    private static Outcome inbox(DataSource dataSource, Message message) {
        // readme:inbox begin
        JdbcInbox inbox = JdbcInbox.builder(dataSource).namespace("payments").build();

        Outcome outcome = inbox.handle(Delivery.of(message.key(), Fingerprint.of(message.body())), connection -> {
            try (var debit = connection.prepareStatement("UPDATE account SET balance = balance - ? WHERE id = ?")) {
                debit.setLong(1, message.amount());
                debit.setLong(2, message.accountId());
                debit.executeUpdate(); // same transaction as the mark
            }
            return Outcome.processed(); // PROCESSED/DUPLICATE commit; anything else rolls back
        });
        // readme:inbox end
        return outcome;
    }

    @Test
    void readmeInboxBatchExample_debitsEachNewMessageOnce_inOneJdbcBatch_andIsShownVerbatim() throws SQLException {
        try (TestDatabase db = TestDatabase.h2("ReadmeJdbcExampleTest")) {
            db.execute("CREATE TABLE account (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL)");
            db.execute("INSERT INTO account VALUES (7, 100), (8, 100)");
            JdbcInbox inbox = JdbcInbox.builder(db.dataSource())
                    .createTableIfMissing(true)
                    .namespace("payments")
                    .build();
            inbox.handle(Delivery.of("pay-1"), c -> Outcome.processed()); // an earlier delivery
            List<Message> messages = List.of(
                    new Message("pay-1", new byte[] {1}, 30, 7),
                    new Message("pay-2", new byte[] {2}, 20, 7),
                    new Message("pay-3", new byte[] {3}, 5, 8));

            // readme:inbox-batch begin
            List<Delivery> deliveries =
                    messages.stream().map(m -> Delivery.of(m.key())).toList();
            List<Outcome> outcomes = inbox.handleBatch(deliveries, (connection, fresh) -> { // the new ones only
                try (var debit = connection.prepareStatement("UPDATE account SET balance = balance - ? WHERE id = ?")) {
                    for (HandlingContext context : fresh) {
                        Message message = messages.get(context.index()); // its position in your list
                        debit.setLong(1, message.amount());
                        debit.setLong(2, message.accountId());
                        debit.addBatch();
                    }
                    debit.executeBatch(); // one round trip for the whole batch, in the marks' transaction
                }
                return Collections.nCopies(fresh.size(), Outcome.processed()); // one per context, in order
            });
            // readme:inbox-batch end

            assertThat(outcomes)
                    .extracting(Outcome::type)
                    .containsExactly(Outcome.Type.DUPLICATE, Outcome.Type.PROCESSED, Outcome.Type.PROCESSED);
            try (Connection c = db.connection();
                    ResultSet rs = c.createStatement().executeQuery("SELECT balance FROM account ORDER BY id")) {
                rs.next();
                assertThat(rs.getLong(1)).isEqualTo(80);
                rs.next();
                assertThat(rs.getLong(1)).isEqualTo(95);
            }
        }
        ReadmeSnippets.assertShown(SOURCE, "inbox-batch");
    }

    @Test
    void readmeLeaseExample_compilesRuns_andIsShownVerbatim() {
        try (TestDatabase db = TestDatabase.h2("ReadmeJdbcExampleTest")) {
            JdbcStore.builder(db.dataSource()).createTableIfMissing(true).build();
            DataSource dataSource = db.dataSource();
            Message message = new Message("mail-1", new byte[] {1}, 0, 0);
            ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor();
            try {
                // readme:lease begin
                JdbcStore store = JdbcStore.builder(dataSource)
                        .useDatabaseClock(true) // nodes with skewed clocks agree on lease ends
                        .build();
                Guard guard = Guard.builder(store).namespace("mailer").build();
                Outcome outcome = guard.run(message.key(), () -> mailer.send(message));

                store.schedulePurge(scheduler, Duration.ofMinutes(5)); // or store.purgeExpired(): the count
                // readme:lease end
                assertThat(outcome.type()).isEqualTo(Outcome.Type.PROCESSED);
                assertThat(guard.run(message.key(), () -> mailer.send(message)).type())
                        .isEqualTo(Outcome.Type.DUPLICATE);
                assertThat(mails).hasSize(1);
            } finally {
                scheduler.shutdownNow();
            }
        }
        ReadmeSnippets.assertShown(SOURCE, "lease");
    }

    interface Gateway {
        void charge(Message message);
    }

    @Test
    void readmeLeaseInTransactionExample_chargesOnce_marksPaidWithTheCompletion_andIsShownVerbatim()
            throws SQLException {
        try (TestDatabase db = TestDatabase.h2("ReadmeJdbcExampleTest")) {
            db.execute("CREATE TABLE payment (id VARCHAR(50) PRIMARY KEY, status VARCHAR(10) NOT NULL)");
            db.execute("INSERT INTO payment VALUES ('pay-1', 'PENDING')");
            DataSource dataSource = db.dataSource();
            JdbcStore store =
                    JdbcStore.builder(dataSource).createTableIfMissing(true).build();
            List<Message> charges = new ArrayList<>();
            Gateway gateway = charges::add;
            Message message = new Message("pay-1", new byte[] {1}, 30, 7);
            List<Outcome.Type> outcomes = new ArrayList<>();
            try (Guard guard = Guard.builder(store).namespace("payments").build()) {
                for (int delivery = 0; delivery < 2; delivery++) {
                    Outcome outcome = chargeOnce(guard, store, dataSource, gateway, message);
                    outcomes.add(outcome.type());
                }
            }
            assertThat(outcomes).containsExactly(Outcome.Type.PROCESSED, Outcome.Type.DUPLICATE);
            assertThat(charges).hasSize(1);
            try (Connection c = db.connection();
                    ResultSet rs = c.createStatement().executeQuery("SELECT status FROM payment")) {
                rs.next();
                assertThat(rs.getString(1)).isEqualTo("PAID");
            }
        }
        ReadmeSnippets.assertShown(SOURCE, "lease-in-transaction");
    }

    private static Outcome chargeOnce(
            Guard guard, JdbcStore store, DataSource dataSource, Gateway gateway, Message message) {
        // readme:lease-in-transaction begin
        OwnTransaction tx = OwnTransaction.of(dataSource);
        Outcome outcome = guard.handle(Delivery.of(message.key()), context -> {
            gateway.charge(message); // the call elsewhere, outside the transaction, which may run again
            return tx.run(c -> {
                try (var paid = c.prepareStatement("UPDATE payment SET status = 'PAID' WHERE id = ?")) {
                    paid.setString(1, message.key());
                    paid.executeUpdate(); // your write
                }
                return store.completeInTransaction(c, context, Outcome.processed()); // last; return it
            });
        });
        // readme:lease-in-transaction end
        return outcome;
    }
}
