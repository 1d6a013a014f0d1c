package dev.idem.outbox;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.Delivery;
import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import dev.idem.jdbc.JdbcInbox;
import dev.idem.kafka.IdempotentKafkaConsumer;
import dev.idem.kafka.KafkaProducers;
import dev.idem.kafka.KeyExtractor;
import dev.idem.nats.IdempotentNatsConsumer;
import dev.idem.outbox.kafka.KafkaOutboxPublisher;
import dev.idem.outbox.nats.NatsOutboxPublisher;
import dev.idem.outbox.spi.OutboxPublisher;
import io.nats.client.Nats;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

/**
 * One process of {@link TwoStageKillNineTest}, which SIGKILLs it at random moments. Arguments: role, broker ({@code
 * kafka} or {@code nats}), bootstrap servers or NATS URL, JDBC URL, orders topic or subject, paid topic or subject.
 *
 * <ul>
 *   <li>{@code payments}: consumes orders through the {@link JdbcInbox} (key: the order id in idem-key or Nats-Msg-Id); in the same
 *       transaction, records the payment and sends "payment completed" through the {@link Outbox} (key: the customer);
 *   <li>{@code relay}: an {@link OutboxRelay} publishing the outbox to the paid topic with the Kafka publisher;
 *   <li>{@code shipping}: consumes the paid topic through its own inbox (key: the outbox message id in idem-key or
 *       header); records the shipment with the customer's previous shipped sequence number, for the order verdict.
 * </ul>
 */
final class TwoStageChild {
    static final RetryPolicy FAST_RETRY = RetryPolicy.builder()
            .initialDelay(Duration.ofMillis(100))
            .multiplier(1.0)
            .maxDelay(Duration.ofMillis(100))
            .maxAttempts(300)
            .jitter(0.0)
            .build();

    private TwoStageChild() {}

    public static void main(String[] args) throws Exception {
        String role = args[0];
        String broker = args[1];
        String bootstrap = args[2];
        String jdbcUrl = args[3];
        String orders = args[4];
        String paid = args[5];
        HikariConfig pool = new HikariConfig();
        pool.setJdbcUrl(jdbcUrl);
        pool.setMaximumPoolSize(3);
        pool.setMinimumIdle(1);
        try (HikariDataSource dataSource = new HikariDataSource(pool)) {
            boolean kafka = broker.equals("kafka");
            switch (role) {
                case "payments" -> {
                    if (kafka) {
                        consume(bootstrap, orders, paid, dataSource, "payments", payments());
                    } else {
                        consumeNats(bootstrap, orders, "payments", paid, dataSource, payments());
                    }
                }
                case "shipping" -> {
                    if (kafka) {
                        consume(bootstrap, paid, paid, dataSource, "shipping", shipping());
                    } else {
                        consumeNats(bootstrap, paid, "shipping", paid, dataSource, shipping());
                    }
                }
                case "relay" -> relay(kafka ? kafkaPublisher(bootstrap) : natsPublisher(bootstrap), dataSource);
                default -> throw new IllegalArgumentException(role);
            }
        }
    }

    /** The stream that holds {@code subject} ({@code prefix.orders} → {@code PREFIX_ORDERS}). */
    static String natsStream(String subject) {
        return subject.toUpperCase(java.util.Locale.ROOT).replace('.', '_');
    }

    /** Stage one: the payment and its event commit with the order's mark. */
    private static Stage payments() {
        Outbox outbox = Outbox.builder().build();
        return (c, paidTopic, value) -> {
            String[] order = value.split(":"); // orderId:customer:seq
            try (PreparedStatement ps =
                    c.prepareStatement("INSERT INTO payments (order_id, customer, seq) VALUES (?, ?, ?)")) {
                ps.setString(1, order[0]);
                ps.setString(2, order[1]);
                ps.setInt(3, Integer.parseInt(order[2]));
                ps.executeUpdate();
            }
            outbox.send(
                    c,
                    OutboxMessage.to(paidTopic)
                            .key(order[1])
                            .header("type", "PaymentCompleted")
                            .payload(value));
            return Outcome.processed();
        };
    }

    /** Stage two: the shipment, with the customer's last shipped sequence number at the time. */
    private static Stage shipping() {
        return (c, unused, value) -> {
            String[] order = value.split(":");
            int previous;
            try (PreparedStatement ps = c.prepareStatement("SELECT MAX(seq) FROM shipments WHERE customer = ?")) {
                ps.setString(1, order[1]);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    previous = rs.getInt(1);
                }
            }
            try (PreparedStatement ps = c.prepareStatement(
                    "INSERT INTO shipments (order_id, customer, seq, previous_seq) VALUES (?, ?, ?, ?)")) {
                ps.setString(1, order[0]);
                ps.setString(2, order[1]);
                ps.setInt(3, Integer.parseInt(order[2]));
                ps.setInt(4, previous);
                ps.executeUpdate();
            }
            return Outcome.processed();
        };
    }

    @FunctionalInterface
    private interface Stage {
        Outcome apply(java.sql.Connection c, String paidTopic, String value) throws Exception;
    }

    private static void consume(
            String bootstrap, String topic, String paid, HikariDataSource dataSource, String namespace, Stage stage)
            throws Exception {
        String group = topic + "-" + namespace;
        JdbcInbox inbox = JdbcInbox.builder(dataSource).namespace(namespace).build();
        Map<String, Object> props = new HashMap<>();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("auto.offset.reset", "earliest");
        props.put("session.timeout.ms", 3000);
        props.put("heartbeat.interval.ms", 300);
        props.put("client.id", group + "-" + ProcessHandle.current().pid());
        var consumer = IdempotentKafkaConsumer.builder(props)
                .topics(topic)
                .workers(2)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .retryPolicy(FAST_RETRY)
                .handler((key, record) -> inbox.handle(Delivery.of(key), c -> stage.apply(c, paid, record.value())))
                .build()
                .start();
        System.out.println("STARTED");
        consumer.awaitTermination(Duration.ofDays(1));
    }

    private static OutboxPublisher kafkaPublisher(String bootstrap) {
        return KafkaOutboxPublisher.create(Map.of("bootstrap.servers", bootstrap));
    }

    private static OutboxPublisher natsPublisher(String url) throws Exception {
        return NatsOutboxPublisher.of(Nats.connect(url).jetStream());
    }

    private static void consumeNats(
            String url, String subject, String durable, String paid, HikariDataSource dataSource, Stage stage)
            throws Exception {
        JdbcInbox inbox = JdbcInbox.builder(dataSource).namespace(durable).build();
        IdempotentNatsConsumer.builder(Nats.connect(url))
                .consumer(natsStream(subject), durable)
                .deadLetterSubject(subject + "-dlq")
                .retryPolicy(FAST_RETRY)
                .workers(2)
                .handler((key, message) -> inbox.handle(
                        Delivery.of(key),
                        c -> stage.apply(c, paid, new String(message.getData(), StandardCharsets.UTF_8))))
                .build()
                .start();
        System.out.println("STARTED");
        new CountDownLatch(1).await();
    }

    private static void relay(OutboxPublisher broker, HikariDataSource dataSource) throws InterruptedException {
        // Tells the test each broker acknowledgement, so that it can kill the relay between the ack and "sent".
        OutboxPublisher publisher = record -> broker.publish(record).thenRun(() -> System.out.println("ACK"));
        OutboxRelay.builder(dataSource, publisher)
                .shards(8)
                .lease(Duration.ofSeconds(3))
                .publishTimeout(Duration.ofSeconds(1))
                .pollInterval(Duration.ofMillis(50))
                .build()
                .start();
        System.out.println("STARTED");
        new CountDownLatch(1).await();
    }
}
