package dev.idem.rocketmq;

import static dev.idem.rocketmq.RocketMQFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Delivery;
import dev.idem.Outcome;
import dev.idem.jdbc.JdbcInbox;
import dev.idem.testsupport.PaymentBank;
import dev.idem.testsupport.PrivateServer;
import dev.idem.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.IntStream;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.junit.jupiter.api.Test;

/**
 * The database is down for longer than the attempt bound lets a failing message be retried, while payments arrive:
 * whether the inbox meets the outage or the handler's own query before it does (an exception whose chain is a
 * connection error), every delivery meanwhile is a wait, never counted, so nothing is dead-lettered and each payment
 * is applied once the database is back. A private PostgreSQL, stopped and started by the test.
 */
class StoreOutageTest {
    private static final int PAYMENTS = 8;
    private static final int MAX_ATTEMPTS = 3;

    @Test
    void databaseDownPastTheAttemptBound_underTraffic_nothingDeadLettered_eachPaymentAppliedOnce() throws Exception {
        String topic = RocketMQFixture.topic("store-outage", 2);
        String group = topic + "-g";
        String account = topic + "-acc";
        Map<String, Integer> tries = new ConcurrentHashMap<>();
        DefaultMQPushConsumer consumer = RocketMQFixture.consumer(group, topic, group);
        DefaultMQProducer producer = RocketMQFixture.producer(group + "-p");
        try (PrivateServer postgres = PrivateServer.postgres();
                TestDatabase db = TestDatabase.postgres(postgres.server(), "RocketMQStoreOutage")) {
            db.execute("CREATE TABLE account (id VARCHAR(100) PRIMARY KEY, balance BIGINT NOT NULL)");
            db.execute("CREATE TABLE ledger (id SERIAL PRIMARY KEY, account_id VARCHAR(100) NOT NULL,"
                    + " amount BIGINT NOT NULL, message_key VARCHAR(200) NOT NULL)");
            db.execute("INSERT INTO account VALUES ('" + account + "', 1000)");
            JdbcInbox inbox = JdbcInbox.builder(db.dataSource())
                    .namespace("outage")
                    .createTableIfMissing(true)
                    .build();
            consumer.registerMessageListener(RocketMQFixture.idem(consumer)
                    .retryPolicy(RocketMQFixture.FAST_RETRY.toBuilder()
                            .maxAttempts(MAX_ATTEMPTS)
                            .build())
                    .keyFrom(KeyExtractor.keys())
                    .handler((key, message) -> {
                        tries.merge(key, 1, Integer::sum);
                        lookUp(db, account); // a handler that reads before it writes meets the outage itself
                        return inbox.handle(Delivery.of(key), c -> {
                            PaymentBank.debit(c, account, 1, key);
                            return Outcome.processed();
                        });
                    })
                    .build()
                    .concurrently());
            RocketMQFixture.start(consumer);
            RocketMQFixture.send(producer, topic, "pay-0", "pay-0");
            await().atMost(WAIT).until(() -> count(db, "SELECT COUNT(*) FROM ledger") == 1);

            postgres.stop();
            IntStream.rangeClosed(1, PAYMENTS).forEach(i -> RocketMQFixture.send(producer, topic, "pay-" + i, "p"));
            await().atMost(WAIT)
                    .until(() -> IntStream.rangeClosed(1, PAYMENTS)
                            .allMatch(i -> tries.getOrDefault("pay-" + i, 0) > MAX_ATTEMPTS));
            postgres.start();

            await().atMost(WAIT).until(() -> count(db, "SELECT COUNT(*) FROM ledger") == PAYMENTS + 1);
            RocketMQFixture.awaitAllConsumed(consumer, topic, 2);
            assertThat(count(db, "SELECT COUNT(DISTINCT message_key) FROM ledger"))
                    .isEqualTo(PAYMENTS + 1);
            assertThat(count(db, "SELECT balance FROM account")).isEqualTo(1000 - PAYMENTS - 1);
        } finally {
            consumer.shutdown();
            producer.shutdown();
        }
        assertThat(RocketMQFixture.deadLetters(group)).isEmpty();
    }

    private static void lookUp(TestDatabase db, String account) throws SQLException {
        try (Connection c = db.connection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT balance FROM account WHERE id = '" + account + "'")) {
            rs.next();
        }
    }

    private static long count(TestDatabase db, String sql) throws Exception {
        try (Connection c = db.connection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
