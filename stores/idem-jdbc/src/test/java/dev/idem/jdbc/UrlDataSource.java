package dev.idem.jdbc;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.logging.Logger;
import javax.sql.DataSource;

/** A data source that opens a real driver connection per call, without a pool: for unreachable servers. */
final class UrlDataSource implements DataSource {
    private final String url;

    UrlDataSource(String url) {
        this.url = url;
    }

    /** A JDBC URL of {@code engine} pointing at a local port nobody listens on. */
    static UrlDataSource unreachable(Dialect dialect) {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return new UrlDataSource(
                switch (dialect) {
                    case POSTGRESQL -> "jdbc:postgresql://127.0.0.1:" + port + "/x?user=x&connectTimeout=2";
                    case MARIADB, MYSQL -> "jdbc:mariadb://127.0.0.1:" + port + "/x?user=x&connectTimeout=2000";
                    case H2 -> "jdbc:h2:tcp://127.0.0.1:" + port + "/mem:x";
                });
    }

    @Override
    public Connection getConnection() throws SQLException {
        return DriverManager.getConnection(url);
    }

    @Override
    public Connection getConnection(String username, String password) throws SQLException {
        return DriverManager.getConnection(url, username, password);
    }

    @Override
    public PrintWriter getLogWriter() {
        return null;
    }

    @Override
    public void setLogWriter(PrintWriter out) {}

    @Override
    public void setLoginTimeout(int seconds) {}

    @Override
    public int getLoginTimeout() {
        return 0;
    }

    @Override
    public Logger getParentLogger() throws SQLFeatureNotSupportedException {
        throw new SQLFeatureNotSupportedException();
    }

    @Override
    public <T> T unwrap(Class<T> iface) throws SQLException {
        throw new SQLException("not a wrapper");
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) {
        return false;
    }
}
