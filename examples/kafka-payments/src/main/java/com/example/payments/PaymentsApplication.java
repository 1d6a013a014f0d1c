package com.example.payments;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.kafka.IdempotentKafkaConsumer;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import javax.sql.DataSource;

/**
 * Runs the payment consumer until the process is stopped. Settings come from the environment: {@code
 * KAFKA_BOOTSTRAP_SERVERS} (127.0.0.1:9092), {@code PAYMENTS_TOPIC} (payments), {@code PAYMENTS_GROUP} (payments),
 * {@code JDBC_URL} (jdbc:postgresql://127.0.0.1:5432/test), {@code JDBC_USER} (postgres), {@code JDBC_PASSWORD}.
 */
public final class PaymentsApplication {
    private PaymentsApplication() {}

    public static void main(String[] args) throws Exception {
        HikariDataSource pool = pool(env("JDBC_URL", "jdbc:postgresql://127.0.0.1:5432/test"));
        createSchema(pool);
        IdempotentKafkaConsumer<String, String> consumer = PaymentConsumer.start(
                env("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092"),
                env("PAYMENTS_TOPIC", "payments"),
                env("PAYMENTS_GROUP", "payments"),
                pool);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            consumer.close(); // first the consumer: it finishes the records in hand and commits ...
            pool.close(); // ... then the pool those records use
        }));
        while (!consumer.awaitTermination(Duration.ofSeconds(60))) {
            // runs until the shutdown hook closes it, or it stops on its own (failure() says why)
        }
        consumer.failure().ifPresent(failure -> {
            throw new IllegalStateException("the payment consumer stopped", failure);
        });
    }

    /** A HikariCP pool sized for the consumer's workers (the poll thread needs no connection). */
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
        try (Connection connection = dataSource.getConnection();
                Statement statement = connection.createStatement()) {
            for (String sql : schema.replaceAll("(?m)^--.*$", "").split(";")) {
                if (!sql.isBlank()) {
                    statement.execute(sql);
                }
            }
        }
    }

    private static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value == null || value.isBlank() ? fallback : value;
    }
}
