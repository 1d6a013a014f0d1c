package com.example.payments;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.zaxxer.hikari.HikariDataSource;
import dev.idem.nats.IdempotentNatsConsumer;
import io.nats.client.Connection;
import io.nats.client.JetStreamManagement;
import io.nats.client.Nats;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import java.nio.charset.StandardCharsets;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * Publishes every payment twice, one payment id again with another amount and one unreadable payment to your NATS
 * server (streams of their own, deleted afterwards); the consumer debits each payment once on a database of its own
 * on your PostgreSQL and dead-letters the other two with their reason. Counted by SQL.
 */
class PaymentConsumerTest {
    private static final int PAYMENTS = 20;

    @Test
    void everyPaymentDebitedOnce_resendsIgnored_badOnesDeadLettered() throws Exception {
        String name = "payments_test_" + UUID.randomUUID().toString().replace("-", "");
        String stream = name.toUpperCase();
        String subject = name;
        String deadLetters = name + "-dlq";
        try (PrivateDatabase database = new PrivateDatabase();
                HikariDataSource pool = PaymentsApplication.pool(database.url());
                Connection nats = Nats.connect(System.getenv().getOrDefault("NATS_URL", "nats://127.0.0.1:4222"))) {
            JetStreamManagement jsm = nats.jetStreamManagement();
            try {
                PaymentsApplication.createSchema(pool);
                execute(pool, "INSERT INTO account (id, balance_cents) VALUES ('alice', 100000)");
                PaymentStreams.create(jsm, stream, subject, deadLetters, "payments");
                for (int i = 1; i <= PAYMENTS; i++) {
                    publish(nats, subject, "payment-" + i, "alice:" + i * 100);
                    publish(nats, subject, "payment-" + i, "alice:" + i * 100); // the same payment id: a resend
                }
                publish(nats, subject, "payment-1", "alice:999"); // the id reused with another amount: REJECTED
                publish(nats, subject, "payment-x", "not a payment"); // REJECTED

                IdempotentNatsConsumer consumer = PaymentConsumer.start(nats, stream, "payments", deadLetters, pool);
                try {
                    await().atMost(Duration.ofSeconds(60)).until(() -> {
                        var info = jsm.getConsumerInfo(stream, "payments");
                        return info.getNumPending() == 0 && info.getNumAckPending() == 0;
                    });
                } finally {
                    consumer.close();
                }

                assertEquals(PAYMENTS, count(pool, "SELECT count(*) FROM payment"));
                assertEquals(PAYMENTS, count(pool, "SELECT count(DISTINCT payment_id) FROM payment"));
                long debited = 100L * PAYMENTS * (PAYMENTS + 1) / 2;
                assertEquals(100000 - debited, count(pool, "SELECT balance_cents FROM account WHERE id = 'alice'"));
                assertEquals(2, jsm.getStreamInfo(stream + "_DLQ").getStreamState().getMsgCount());
            } finally {
                for (String s : new String[] {stream, stream + "_DLQ"}) {
                    if (jsm.getStreamNames().contains(s)) {
                        jsm.deleteStream(s);
                    }
                }
            }
        }
    }

    /**
     * Publishes a payment with its id in the {@code Payment-Id} header and no {@code Nats-Msg-Id}, so that JetStream
     * stores every copy and the guard alone keeps the debit single. (Production producers also set {@code
     * Nats-Msg-Id}, with {@code NatsProducers.message}, so the server drops resends within its duplicate window.)
     */
    private static void publish(Connection nats, String subject, String paymentId, String payment) throws Exception {
        Headers headers = new Headers().add(PaymentConsumer.PAYMENT_ID, paymentId);
        nats.jetStream().publish(NatsMessage.builder()
                .subject(subject)
                .headers(headers)
                .data(payment.getBytes(StandardCharsets.UTF_8))
                .build());
    }

    private static long count(HikariDataSource pool, String sql) throws SQLException {
        try (java.sql.Connection connection = pool.getConnection();
                Statement statement = connection.createStatement();
                ResultSet rows = statement.executeQuery(sql)) {
            rows.next();
            return rows.getLong(1);
        }
    }

    private static void execute(HikariDataSource pool, String sql) throws SQLException {
        try (java.sql.Connection connection = pool.getConnection();
                Statement statement = connection.createStatement()) {
            statement.execute(sql);
        }
    }
}
