package com.example.payments;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;

/**
 * A database of its own on the PostgreSQL server of {@code JDBC_URL} (default jdbc:postgresql://127.0.0.1:5432/test),
 * created for one test run and dropped after it, so that the test never touches your data.
 */
final class PrivateDatabase implements AutoCloseable {
    private final String serverUrl;
    private final String name = "payments_test_" + UUID.randomUUID().toString().replace("-", "");

    PrivateDatabase() throws SQLException {
        serverUrl = env("JDBC_URL", "jdbc:postgresql://127.0.0.1:5432/test");
        execute("CREATE DATABASE " + name);
    }

    /** The JDBC URL of this database. */
    String url() {
        return serverUrl.replaceFirst("/[^/?]*(\\?|$)", "/" + name + "$1");
    }

    @Override
    public void close() throws SQLException {
        execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
    }

    private void execute(String sql) throws SQLException {
        try (Connection connection =
                        DriverManager.getConnection(serverUrl, env("JDBC_USER", "postgres"), env("JDBC_PASSWORD", ""));
                Statement statement = connection.createStatement()) {
            statement.execute(sql);
        }
    }

    private static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value == null || value.isBlank() ? fallback : value;
    }
}
