package dev.idem.rabbitmq;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.Delivery;
import dev.idem.Outcome;
import dev.idem.jdbc.JdbcInbox;
import dev.idem.testsupport.ChildJvm;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;

/**
 * One consumer process of {@link KillNineTest}: the docs' payment consumer ({@link JdbcInbox} on a connection pool +
 * {@link IdempotentRabbitConsumer}, two channels), which the test SIGKILLs at random moments. Every fifth payment
 * fails on its first delivery, so that retry copies are in flight when a kill strikes. It prints {@code TX <key>} to
 * stdout while a debit's transaction is open, so that the test can kill it mid-transaction.
 *
 * <p>Arguments: AMQP URI, work queue, JDBC URL, inbox namespace.
 */
final class KillNineConsumer {
    private KillNineConsumer() {}

    public static void main(String[] args) throws Exception {
        URI amqp = URI.create(args[0]);
        String queue = args[1];
        String jdbcUrl = args[2];
        String namespace = args[3];
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        HikariConfig pool = new HikariConfig();
        pool.setJdbcUrl(jdbcUrl);
        pool.setMaximumPoolSize(4);
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(amqp);
        try (HikariDataSource dataSource = new HikariDataSource(pool);
                Connection connection = factory.newConnection(
                        "idem-kill9-" + ProcessHandle.current().pid())) {
            JdbcInbox inbox = JdbcInbox.builder(dataSource).namespace(namespace).build();
            IdempotentRabbitConsumer.builder(connection, RabbitTopology.forQueue(queue))
                    .concurrency(2)
                    .prefetch(10)
                    .retryPolicy(RabbitFixture.FAST_RETRY)
                    .handler((key, message) -> firstDeliveryOfEveryFifth(key, message)
                            ? Outcome.failed("transient failure: every fifth payment goes round the retry queue", null)
                            : inbox.handle(Delivery.of(key), c -> {
                                String[] debit = new String(message.getBody(), StandardCharsets.UTF_8).split(":");
                                ChildJvm.debitWithTransactionOpen(c, debit[0], Long.parseLong(debit[1]), key);
                                return Outcome.processed();
                            }))
                    .build()
                    .start();
            out.println("STARTED");
            new CountDownLatch(1).await(); // until killed
        }
    }

    /** Payments {@code pay-0}, {@code pay-5}, ... fail until they come back from the retry queue. */
    private static boolean firstDeliveryOfEveryFifth(String key, com.rabbitmq.client.Delivery message) {
        var headers = message.getProperties().getHeaders();
        return Integer.parseInt(key.substring(key.indexOf('-') + 1)) % 5 == 0
                && (headers == null || !headers.containsKey(DeliveryProcessor.ATTEMPTS_HEADER));
    }
}
