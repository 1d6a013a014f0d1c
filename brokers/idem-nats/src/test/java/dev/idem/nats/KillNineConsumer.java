package dev.idem.nats;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.Delivery;
import dev.idem.Outcome;
import dev.idem.jdbc.JdbcInbox;
import dev.idem.testsupport.ChildJvm;
import io.nats.client.Connection;
import io.nats.client.Nats;
import io.nats.client.Options;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * One consumer process of {@link KillNineTest}: the docs' payment consumer ({@link JdbcInbox} in the handler of an
 * {@link IdempotentNatsConsumer}, on a pool of PostgreSQL connections), which the test SIGKILLs at random moments. It prints {@code TX <key>}
 * while a debit's transaction is open, so that the test can kill it mid-transaction.
 *
 * <p>Arguments: NATS URL, stream, durable consumer, dead-letter subject, JDBC URL, inbox namespace.
 */
final class KillNineConsumer {
    static final String KEY_HEADER = "Payment-Id";

    private KillNineConsumer() {}

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        HikariConfig pool = new HikariConfig();
        pool.setJdbcUrl(args[4]);
        pool.setMaximumPoolSize(3);
        try (HikariDataSource dataSource = new HikariDataSource(pool);
                Connection nats = Nats.connect(Options.builder()
                        .server(args[0])
                        .connectionTimeout(Duration.ofSeconds(10))
                        .maxReconnects(-1)
                        .build())) {
            JdbcInbox inbox = JdbcInbox.builder(dataSource).namespace(args[5]).build();
            try (IdempotentNatsConsumer consumer = IdempotentNatsConsumer.builder(nats)
                    .consumer(args[1], args[2])
                    .deadLetterSubject(args[3])
                    .keyFrom(KeyExtractor.header(KEY_HEADER))
                    .workers(2)
                    .retryPolicy(NatsFixture.FAST_RETRY)
                    .handler((key, message) -> inbox.handle(Delivery.of(key), c -> {
                        String[] debit = new String(message.getData(), StandardCharsets.UTF_8).split(":");
                        ChildJvm.debitWithTransactionOpen(c, debit[0], Long.parseLong(debit[1]), key);
                        return Outcome.processed();
                    }))
                    .build()
                    .start()) {
                out.println("STARTED");
                while (consumer.isRunning()) {
                    Thread.sleep(1000);
                }
            }
        }
    }
}
