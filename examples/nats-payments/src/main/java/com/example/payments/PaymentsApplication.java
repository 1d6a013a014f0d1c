package com.example.payments;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.nats.IdempotentNatsConsumer;
import io.nats.client.Connection;
import io.nats.client.Nats;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/**
 * Runs the payment consumer until the process is stopped. Settings come from the environment: {@code NATS_URL}
 * (nats://127.0.0.1:4222), {@code PAYMENTS_STREAM} (PAYMENTS), {@code PAYMENTS_SUBJECT} (payments), {@code
 * PAYMENTS_DLQ_SUBJECT} (payments-dlq), {@code PAYMENTS_DURABLE} (payments), {@code JDBC_URL}
 * (jdbc:postgresql://127.0.0.1:5432/test), {@code JDBC_USER} (postgres), {@code JDBC_PASSWORD}.
 */
public final class PaymentsApplication {
    private PaymentsApplication() {}

    public static void main(String[] args) throws Exception {
        HikariDataSource pool = pool(env("JDBC_URL", "jdbc:postgresql://127.0.0.1:5432/test"));
        createSchema(pool);
        Connection nats = Nats.connect(env("NATS_URL", "nats://127.0.0.1:4222"));
        String stream = env("PAYMENTS_STREAM", "PAYMENTS");
        String durable = env("PAYMENTS_DURABLE", "payments");
        String deadLetters = env("PAYMENTS_DLQ_SUBJECT", "payments-dlq");
        PaymentStreams.create(
                nats.jetStreamManagement(), stream, env("PAYMENTS_SUBJECT", "payments"), deadLetters, durable);
        IdempotentNatsConsumer consumer = PaymentConsumer.start(nats, stream, durable, deadLetters, pool);
        Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            consumer.close(); // first the consumer: it finishes the messages in hand and acks them ...
            close(nats); // ... then the connection it acks on ...
            pool.close(); // ... and the pool the handlers used
            main.interrupt();
        }));
        while (consumer.isRunning()) {
            try {
                Thread.sleep(1000); // nothing to do here: the consumer's workers run the payments
            } catch (InterruptedException e) {
                return;
            }
        }
        consumer.failure().ifPresent(failure -> {
            throw new IllegalStateException("the payment consumer stopped", failure);
        });
    }

    /** A HikariCP pool sized for the consumer's workers. */
    public static HikariDataSource pool(String jdbcUrl) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(jdbcUrl);
        config.setUsername(env("JDBC_USER", "postgres"));
        config.setPassword(env("JDBC_PASSWORD", ""));
        config.setMaximumPoolSize(PaymentConsumer.WORKERS);
        return new HikariDataSource(config);
    }

    /** Creates the application's tables (schema.sql) if they are missing. */
    public static void createSchema(DataSource dataSource) throws SQLException, IOException {
        String schema;
        try (InputStream in = PaymentsApplication.class.getResourceAsStream("/schema.sql")) {
            if (in == null) {
                throw new IOException("schema.sql is missing from the class path");
            }
            schema = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        try (java.sql.Connection connection = dataSource.getConnection();
                Statement statement = connection.createStatement()) {
            for (String sql : schema.replaceAll("(?m)^--.*$", "").split(";")) {
                if (!sql.isBlank()) {
                    statement.execute(sql);
                }
            }
        }
    }

    private static void close(Connection nats) {
        try {
            nats.close();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value == null || value.isBlank() ? fallback : value;
    }
}
