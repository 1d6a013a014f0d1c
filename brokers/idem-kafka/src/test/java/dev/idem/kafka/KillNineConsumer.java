package dev.idem.kafka;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.Delivery;
import dev.idem.Outcome;
import dev.idem.jdbc.JdbcInbox;
import dev.idem.testsupport.ChildJvm;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * One consumer process of {@link KillNineTest}: the README's payment consumer ({@link JdbcInbox} + the runner, on a
 * connection pool), which the test SIGKILLs at random moments. It prints {@code TX <key>} to stdout while a debit's
 * transaction is open, so that the test can kill it mid-transaction.
 *
 * <p>Arguments: bootstrap servers, topic, group, group protocol, JDBC URL, inbox namespace.
 */
final class KillNineConsumer {
    private KillNineConsumer() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        String group = args[2];
        String protocol = args[3];
        String jdbcUrl = args[4];
        String namespace = args[5];
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        HikariConfig pool = new HikariConfig();
        pool.setJdbcUrl(jdbcUrl);
        pool.setMaximumPoolSize(4);
        try (HikariDataSource dataSource = new HikariDataSource(pool)) {
            JdbcInbox inbox = JdbcInbox.builder(dataSource).namespace(namespace).build();
            java.util.Map<String, Object> props = new java.util.HashMap<>();
            props.put("bootstrap.servers", bootstrap);
            props.put("group.id", group);
            props.put("group.protocol", protocol);
            props.put("auto.offset.reset", "earliest");
            props.put("client.id", group + "-" + ProcessHandle.current().pid());
            if (protocol.equals("classic")) {
                props.put("session.timeout.ms", 3000);
                props.put("heartbeat.interval.ms", 300);
            }
            var consumer = IdempotentKafkaConsumer.builder(props)
                    .topics(topic)
                    .workers(2)
                    .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                    .retryPolicy(KafkaFixture.FAST_RETRY)
                    .handler((key, record) -> inbox.handle(Delivery.of(key), c -> {
                        String[] debit = record.value().split(":");
                        ChildJvm.debitWithTransactionOpen(c, debit[0], Long.parseLong(debit[1]), key);
                        return Outcome.processed();
                    }))
                    .build()
                    .start();
            out.println("STARTED");
            consumer.awaitTermination(java.time.Duration.ofDays(1));
        }
    }
}
