package dev.idem.demo;

import dev.idem.demo.samples.TwoStageService;
import dev.idem.jdbc.JdbcInbox;
import dev.idem.kafka.KafkaProducers;
import dev.idem.outbox.OutboxSchema;
import dev.idem.testsupport.EmbeddedKafka;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;
import org.jspecify.annotations.Nullable;

/**
 * The two-stage flow of one run: its topics and tables (named after the run's tag), the orders, the services' command
 * lines, sending the orders and waiting until both stages drained.
 */
final class TwoStageFlow {
    private static final long ORDER_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(25);

    private final TwoStageOptions options;
    final String tag = Long.toString(System.nanoTime() & 0xffffffffL, 36);
    final String ordersTopic = "idem-lab-orders-" + tag;
    final String eventsTopic = "idem-lab-events-" + tag;

    TwoStageFlow(TwoStageOptions options) {
        this.options = options;
    }

    /** The lab's truth and the services' tables; the inbox and outbox tables as the library creates them. */
    void createSchema(LabDatabase db) throws SQLException {
        try (Connection c = db.dataSource().getConnection();
                Statement s = c.createStatement()) {
            s.execute("CREATE TABLE IF NOT EXISTS two_stage_orders (run VARCHAR(16) NOT NULL,"
                    + " order_id VARCHAR(64) NOT NULL, customer VARCHAR(64) NOT NULL, seq INT NOT NULL)");
            s.execute("CREATE TABLE IF NOT EXISTS two_stage_payments (order_id VARCHAR(64) NOT NULL,"
                    + " customer VARCHAR(64) NOT NULL, seq INT NOT NULL)");
            s.execute("CREATE TABLE IF NOT EXISTS two_stage_shipments (order_id VARCHAR(64) NOT NULL,"
                    + " customer VARCHAR(64) NOT NULL, seq INT NOT NULL, previous_seq INT NOT NULL,"
                    + " event_id VARCHAR(255) NOT NULL)");
        }
        JdbcInbox.builder(db.dataSource())
                .namespace("two-stage-payments")
                .createTableIfMissing(true)
                .build();
        OutboxSchema.create(db.dataSource());
    }

    /** Order {@code i} goes to customer {@code i % customers}, numbered per customer: {@code orderId:customer:seq}. */
    List<String> recordOrders(LabDatabase db) throws SQLException {
        List<String> orders = new ArrayList<>();
        int[] seq = new int[options.customers()];
        try (Connection c = db.dataSource().getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "INSERT INTO two_stage_orders (run, order_id, customer, seq) VALUES (?, ?, ?, ?)")) {
            c.setAutoCommit(false);
            for (int i = 0; i < options.orders(); i++) {
                int customer = i % options.customers();
                String order = tag + "-" + i;
                String customerId = tag + "-c" + customer;
                int n = ++seq[customer];
                ps.setString(1, tag);
                ps.setString(2, order);
                ps.setString(3, customerId);
                ps.setInt(4, n);
                ps.addBatch();
                orders.add(order + ":" + customerId + ":" + n);
            }
            ps.executeBatch();
            c.commit();
        }
        return orders;
    }

    String command(String role) {
        String guard = role.equals("shipping") && !options.stageTwoGuarded() ? " --guard none" : "";
        return "{java} -Xmx128m -XX:TieredStopAtLevel=1 -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp {classpath} "
                + TwoStageService.class.getName()
                + " --role " + role + " --server {bootstrap} --orders {topic} --events {eventsTopic} --jdbc {jdbcUrl}"
                + " --crash-after-max " + options.crashAfterMax() + guard;
    }

    Map<String, String> placeholders(LabDatabase db, Kafka kafka) {
        Map<String, String> p = new LinkedHashMap<>();
        p.put(
                "java",
                ProcessHandle.current()
                        .info()
                        .command()
                        .orElse(Path.of(System.getProperty("java.home"), "bin", "java")
                                .toString()));
        p.put("classpath", System.getProperty("java.class.path"));
        p.put("bootstrap", kafka.bootstrap);
        p.put("topic", ordersTopic);
        p.put("eventsTopic", eventsTopic);
        p.put("jdbcUrl", db.rawUrl());
        return p;
    }

    /**
     * Sends the orders (every 9th twice, as an application resend), 25 ms apart, keyed by customer with the order id
     * as the idempotency key; {@code afterEachOrder} runs after each order is acknowledged. Each copy is acknowledged
     * before the next is sent, a failed one sent again at once: sent again later, it would land behind its customer's
     * later orders and the run would count the flow's shipments out of order. Returns how many copies were sent again.
     */
    int send(Producer<String, String> producer, List<String> orders, Runnable afterEachOrder) throws Exception {
        int sentAgain = 0;
        for (int i = 0; i < orders.size(); i++) {
            String[] order = orders.get(i).split(":");
            for (int copy = 0; copy < (i % 9 == 0 ? 2 : 1); copy++) {
                sentAgain += AcknowledgedSends.sendUntilAcknowledged(
                        producer,
                        KafkaProducers.withKey(new ProducerRecord<>(ordersTopic, order[1], orders.get(i)), order[0]));
            }
            afterEachOrder.run();
            LockSupport.parkNanos(ORDER_PAUSE_NANOS);
        }
        return sentAgain;
    }

    /** Every order shipped, every event sent, and the counts unchanged for {@code --settle} seconds. */
    boolean awaitDrain(LabDatabase db) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(options.drainSeconds());
        String last = "";
        long stableSince = System.nanoTime();
        while (System.nanoTime() < deadline) {
            long shipped = db.queryLong(
                    "SELECT COUNT(DISTINCT order_id) FROM two_stage_shipments WHERE order_id LIKE '" + tag + "-%'");
            long unsent = db.queryLong(
                    "SELECT COUNT(*) FROM idem_outbox WHERE destination = '" + eventsTopic + "' AND sent_at IS NULL");
            String now = shipped + "/" + unsent + "/"
                    + db.queryLong("SELECT COUNT(*) FROM two_stage_shipments WHERE order_id LIKE '" + tag + "-%'")
                    + "/" + db.queryLong("SELECT COUNT(*) FROM two_stage_payments WHERE order_id LIKE '" + tag + "-%'");
            if (!now.equals(last)) {
                last = now;
                stableSince = System.nanoTime();
            } else if (shipped >= options.orders()
                    && unsent == 0
                    && System.nanoTime() - stableSince >= TimeUnit.SECONDS.toNanos(options.settleSeconds())) {
                return true;
            }
            Thread.sleep(250);
        }
        return false;
    }

    /** The broker: in process or external; the orders' producer; the topics' record counts. */
    static final class Kafka implements AutoCloseable {
        private final @Nullable EmbeddedKafka embedded;
        final String bootstrap;
        private final Admin admin;
        final KafkaProducer<String, String> producer;

        Kafka(@Nullable String external) {
            this.embedded = external == null ? EmbeddedKafka.start(false, Map.of()) : null;
            this.bootstrap = external == null ? embedded.bootstrapServers() : external;
            this.admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap));
            Map<String, Object> settings = new HashMap<>(KafkaProducers.recommendedSettings());
            settings.put("bootstrap.servers", bootstrap);
            settings.putAll(AcknowledgedSends.SETTINGS);
            this.producer = new KafkaProducer<>(settings, new StringSerializer(), new StringSerializer());
        }

        /** Each topic and its {@code -dlt} (where the consumers dead-letter), 4 partitions each. */
        void createTopics(String... topics) throws Exception {
            List<NewTopic> all = new ArrayList<>();
            for (String t : topics) {
                all.add(new NewTopic(t, 4, (short) 1));
                all.add(new NewTopic(t + "-dlt", 4, (short) 1));
            }
            admin.createTopics(all).all().get(30, TimeUnit.SECONDS);
        }

        long records(String topic) throws Exception {
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (int p = 0; p < 4; p++) {
                latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
            }
            return admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS).values().stream()
                    .mapToLong(o -> o.offset())
                    .sum();
        }

        @Override
        public void close() {
            producer.close();
            admin.close();
            if (embedded != null) {
                embedded.close();
            }
        }
    }
}
