package dev.idem.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.jdbc.JdbcInbox;
import dev.idem.kafka.KafkaProducers;
import dev.idem.testsupport.ChildJvm;
import dev.idem.testsupport.EmbeddedKafka;
import dev.idem.testsupport.KillNineStorm;
import dev.idem.testsupport.TestDatabase;
import dev.idem.testsupport.TestServers;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.IntStream;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The issue-25 proof under real crashes: orders → payments service (inbox + outbox) → relay → shipping service
 * (inbox), on PostgreSQL, over the in-process Kafka broker and over NATS JetStream, two processes of each role,
 * SIGKILLed at random moments and restarted while orders arrive (some sent twice). Then the SQL verdict: every order
 * paid once, every payment shipped once, none lost, nothing left unsent; over Kafka also each customer's shipments in
 * the order of its payments (a JetStream pull consumer with several workers and redeliveries does not keep order, so
 * over NATS the first stage already pays a customer's orders out of order).
 */
class TwoStageKillNineTest {
    private static final int ORDERS = 300;
    private static final int CUSTOMERS = 40;
    private static final Duration PRODUCING = Duration.ofSeconds(10);
    private static final Duration KILL_EVERY = Duration.ofMillis(1000);
    private static final int MAX_KILLS = 15;
    private static final Duration STALL = Duration.ofSeconds(60);
    /** The drain's outer bound while orders still move. */
    private static final Duration DRAIN_CAP = Duration.ofMinutes(8);

    private static final Path LOG = Path.of("target", "two-stage-children.log");
    private static final List<String> ROLES = List.of("payments", "payments", "relay", "relay", "shipping", "shipping");

    private static TestDatabase db;

    private static void database(String broker) {
        db = TestDatabase.postgres("TwoStage" + broker);
        db.execute(
                "CREATE TABLE payments (order_id VARCHAR(64) NOT NULL, customer VARCHAR(64) NOT NULL, seq INT NOT NULL)");
        db.execute("CREATE TABLE shipments (order_id VARCHAR(64) NOT NULL, customer VARCHAR(64) NOT NULL,"
                + " seq INT NOT NULL, previous_seq INT NOT NULL)");
        JdbcInbox.builder(db.dataSource())
                .namespace("payments")
                .createTableIfMissing(true)
                .build();
        OutboxSchema.create(db.dataSource());
    }

    @AfterEach
    void drop() {
        db.close();
    }

    @ParameterizedTest
    @ValueSource(strings = {"kafka", "nats"})
    void consumersAndRelaysKilledAtRandom_everyOrderPaidOnce_shippedOnce_noneLost(String broker) throws Exception {
        database(broker);
        Flow flow = broker.equals("kafka") ? new KafkaFlow() : new NatsFlow();
        List<ChildJvm> children = new ArrayList<>();
        Map<String, Integer> kills = new java.util.TreeMap<>();
        int killsAfterAck = 0;
        long events;
        try {
            for (String role : ROLES) {
                children.add(child(role, flow));
            }
            Thread producer = new Thread(() -> produce(flow), "two-stage-producer");
            producer.start();
            // The storm starts once payments flow, so that kills hit working processes, and lasts until most orders
            // are produced and most are shipped, and each role was hit (or the kill budget is spent); its victims
            // take the roles in turn, so that every stage, the relay included, is killed mid-work.
            await().atMost(Duration.ofSeconds(90)).until(() -> count("SELECT COUNT(*) FROM payments") > 0);
            Random random = new Random();
            while (kills.values().stream().mapToInt(Integer::intValue).sum() < MAX_KILLS
                    && (producer.isAlive()
                            || count("SELECT COUNT(*) FROM shipments") < ORDERS * 9 / 10
                            || kills.size() < ROLES.stream().distinct().count())) {
                Thread.sleep(KILL_EVERY.toMillis() / 2 + random.nextInt((int) KILL_EVERY.toMillis()));
                int victim = victim(
                        kills.values().stream().mapToInt(Integer::intValue).sum(), random);
                ChildJvm child = children.get(victim);
                if (ROLES.get(victim).equals("relay") && child.awaitSignal(Duration.ofSeconds(5))) {
                    killsAfterAck++;
                }
                child.kill();
                kills.merge(ROLES.get(victim), 1, Integer::sum);
                children.set(victim, child(ROLES.get(victim), flow));
            }
            producer.join(Duration.ofSeconds(60).toMillis());
            awaitShipped();
            events = flow.events();
        } finally {
            children.forEach(ChildJvm::kill);
            flow.close();
        }
        System.out.printf(
                "two-stage kill -9 (%s): %d orders, kills %s (%d relays right after a broker ack), %d events stored in %s"
                        + " (above %d: republications Kafka kept; JetStream drops them within its duplicate window)%n",
                broker, ORDERS, kills, killsAfterAck, events, flow.paid(), ORDERS);

        assertThat(kills).as("kills per role").containsOnlyKeys("payments", "relay", "shipping");
        assertThat(count(
                        "SELECT COUNT(*) FROM (SELECT order_id FROM payments GROUP BY order_id HAVING COUNT(*) > 1) d"))
                .as("orders paid twice")
                .isZero();
        assertThat(count("SELECT COUNT(DISTINCT order_id) FROM payments"))
                .as("orders paid")
                .isEqualTo(ORDERS);
        assertThat(
                        count(
                                "SELECT COUNT(*) FROM (SELECT order_id FROM shipments GROUP BY order_id HAVING COUNT(*) > 1) d"))
                .as("payments shipped twice")
                .isZero();
        assertThat(count("SELECT COUNT(DISTINCT order_id) FROM shipments"))
                .as("payments shipped")
                .isEqualTo(ORDERS);
        if (broker.equals("kafka")) {
            assertThat(count("SELECT COUNT(*) FROM shipments WHERE previous_seq <> seq - 1"))
                    .as("shipments out of their customer's order")
                    .isZero();
        }
        assertThat(count("SELECT COUNT(*) FROM idem_outbox WHERE sent_at IS NULL"))
                .as("unsent")
                .isZero();
        assertThat(count("SELECT COUNT(*) FROM idem_outbox WHERE parked_at IS NOT NULL"))
                .as("parked")
                .isZero();
    }

    /** The process struck by kill {@code k}: one of the k-th role's, the roles taken in turn. */
    private static int victim(int k, Random random) {
        List<String> roles = ROLES.stream().distinct().toList();
        String role = roles.get(k % roles.size());
        List<Integer> processes = IntStream.range(0, ROLES.size())
                .filter(i -> ROLES.get(i).equals(role))
                .boxed()
                .toList();
        return processes.get(random.nextInt(processes.size()));
    }

    /** Orders {@code order-i} for customer {@code i % CUSTOMERS}, numbered per customer; every 9th sent twice. */
    private static void produce(Flow flow) {
        long pause = PRODUCING.toNanos() / ORDERS;
        int[] seq = new int[CUSTOMERS];
        for (int i = 0; i < ORDERS; i++) {
            int customer = i % CUSTOMERS;
            String value = "order-" + i + ":customer-" + customer + ":" + (++seq[customer]);
            for (int copy = 0; copy < (i % 9 == 0 ? 2 : 1); copy++) {
                flow.order("customer-" + customer, "order-" + i, value);
            }
            java.util.concurrent.locks.LockSupport.parkNanos(pause);
        }
        flow.flush();
    }

    /** The broker side of one run: its topics or streams, the orders' producer, the count of published events. */
    private interface Flow extends AutoCloseable {
        String broker();

        String bootstrap();

        String orders();

        String paid();

        void order(String customer, String orderId, String value);

        void flush();

        long events() throws Exception;

        @Override
        void close();
    }

    private static final class KafkaFlow implements Flow {
        private final EmbeddedKafka kafka = EmbeddedKafka.shared();
        private final String prefix = TestServers.uniquePrefix("twostage");
        private final KafkaProducer<String, String> producer;

        KafkaFlow() {
            for (String topic : List.of(orders(), orders() + "-dlt", paid(), paid() + "-dlt")) {
                kafka.createTopic(topic, topic.endsWith("-dlt") ? 1 : 4);
            }
            Map<String, Object> settings = new java.util.HashMap<>(KafkaProducers.recommendedSettings());
            settings.put("bootstrap.servers", bootstrap());
            producer = new KafkaProducer<>(settings, new StringSerializer(), new StringSerializer());
        }

        @Override
        public String broker() {
            return "kafka";
        }

        @Override
        public String bootstrap() {
            return kafka.bootstrapServers();
        }

        @Override
        public String orders() {
            return prefix + "-orders";
        }

        @Override
        public String paid() {
            return prefix + "-paid";
        }

        @Override
        public void order(String customer, String orderId, String value) {
            producer.send(KafkaProducers.withKey(new ProducerRecord<>(orders(), customer, value), orderId));
        }

        @Override
        public void flush() {
            producer.flush();
        }

        @Override
        public long events() throws Exception {
            return records(kafka, paid());
        }

        @Override
        public void close() {
            producer.close();
        }
    }

    /** Streams {@code <PREFIX>_ORDERS}, {@code <PREFIX>_PAID} and their dead letters; durables payments and shipping. */
    private static final class NatsFlow implements Flow {
        private final String prefix = TestServers.uniquePrefix("twostage");
        private final io.nats.client.Connection connection;

        NatsFlow() throws Exception {
            connection = io.nats.client.Nats.connect(bootstrap());
            var jsm = connection.jetStreamManagement();
            for (String stream : List.of("orders", "paid")) {
                String name = TwoStageChild.natsStream(prefix + "." + stream);
                jsm.addStream(io.nats.client.api.StreamConfiguration.builder()
                        .name(name)
                        .subjects(prefix + "." + stream)
                        .build());
                jsm.addStream(io.nats.client.api.StreamConfiguration.builder()
                        .name(name + "_DLQ")
                        .subjects(prefix + "." + stream + "-dlq")
                        .build());
                jsm.addOrUpdateConsumer(
                        name,
                        io.nats.client.api.ConsumerConfiguration.builder()
                                .durable(stream.equals("orders") ? "payments" : "shipping")
                                .ackPolicy(io.nats.client.api.AckPolicy.Explicit)
                                .ackWait(Duration.ofSeconds(5)) // a killed consumer's messages come back soon
                                .build());
            }
        }

        @Override
        public String broker() {
            return "nats";
        }

        @Override
        public String bootstrap() {
            return TestServers.nats().url();
        }

        @Override
        public String orders() {
            return prefix + ".orders";
        }

        @Override
        public String paid() {
            return prefix + ".paid";
        }

        @Override
        public void order(String customer, String orderId, String value) {
            try {
                dev.idem.nats.NatsProducers.publish(
                        connection.jetStream(),
                        dev.idem.nats.NatsProducers.message(
                                orders(), orderId, value.getBytes(java.nio.charset.StandardCharsets.UTF_8)),
                        dev.idem.RetryPolicy.defaults());
            } catch (Exception e) {
                throw new IllegalStateException("publishing " + orderId + " failed", e);
            }
        }

        @Override
        public void flush() {}

        @Override
        public long events() throws Exception {
            return connection
                    .jetStreamManagement()
                    .getStreamInfo(TwoStageChild.natsStream(paid()))
                    .getStreamState()
                    .getMsgCount();
        }

        @Override
        public void close() {
            try {
                var jsm = connection.jetStreamManagement();
                for (String subject : List.of(orders(), paid())) {
                    jsm.deleteStream(TwoStageChild.natsStream(subject));
                    jsm.deleteStream(TwoStageChild.natsStream(subject) + "_DLQ");
                }
                connection.close();
            } catch (Exception e) {
                System.err.println("[two-stage] could not delete the streams: " + e);
            }
        }
    }

    private static long records(EmbeddedKafka kafka, String topic) throws Exception {
        var partitions = kafka.admin()
                .describeTopics(List.of(topic))
                .allTopicNames()
                .get()
                .get(topic)
                .partitions();
        Map<org.apache.kafka.common.TopicPartition, org.apache.kafka.clients.admin.OffsetSpec> latest =
                new java.util.HashMap<>();
        partitions.forEach(p -> latest.put(
                new org.apache.kafka.common.TopicPartition(topic, p.partition()),
                org.apache.kafka.clients.admin.OffsetSpec.latest()));
        return kafka.admin().listOffsets(latest).all().get().values().stream()
                .mapToLong(o -> o.offset())
                .sum();
    }

    /**
     * Waits until every order is shipped and every event marked sent (a relay killed after the ack left its last
     * messages unsent: its successor publishes them again); fails when nothing moved for {@link #STALL}.
     */
    private static void awaitShipped() throws Exception {
        KillNineStorm.awaitDrained(
                STALL,
                DRAIN_CAP,
                Duration.ofSeconds(1),
                () -> Math.max(0, ORDERS - count("SELECT COUNT(DISTINCT order_id) FROM shipments"))
                        + count("SELECT COUNT(*) FROM idem_outbox WHERE sent_at IS NULL"),
                () -> count("SELECT COUNT(*) FROM payments") + " paid, "
                        + count("SELECT COUNT(DISTINCT order_id) FROM shipments") + " shipped of " + ORDERS
                        + "; children's stderr in " + LOG.toAbsolutePath());
    }

    /** A process of {@code role}; a relay prints {@code ACK} right after each broker acknowledgement. */
    private static ChildJvm child(String role, Flow flow) throws Exception {
        return ChildJvm.start(
                "ACK",
                TwoStageChild.class,
                LOG,
                role,
                flow.broker(),
                flow.bootstrap(),
                db.url(),
                flow.orders(),
                flow.paid());
    }

    private static long count(String sql) throws Exception {
        try (Connection c = db.connection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
