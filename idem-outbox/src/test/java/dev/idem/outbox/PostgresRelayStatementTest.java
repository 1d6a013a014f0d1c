package dev.idem.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.jdbc.Dialect;
import dev.idem.testsupport.TestDatabase;
import dev.idem.testsupport.TestServers;
import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The relay's PostgreSQL fetch as the driver sends it: {@code [mark;] SET LOCAL enable_sort = off; SELECT ...} in one
 * prepared statement. pgjdbc splits it into one Parse per command; a driver that does not (docs/jdbc.md supports
 * PostgreSQL drivers other than pgjdbc) sends it as one Parse, which PostgreSQL refuses.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PostgresRelayStatementTest {
    private final TestDatabase db = TestDatabase.postgres("PostgresRelayStatementTest");

    @AfterAll
    void close() {
        db.close();
    }

    private String table() {
        String table = TestServers.uniquePrefix("rs").toLowerCase(java.util.Locale.ROOT);
        if (table.length() > 40) {
            table = table.substring(0, 40);
        }
        OutboxSchema.create(db.dataSource(), table);
        return table;
    }

    private List<String> send(String table, int count) throws SQLException {
        List<String> ids = new ArrayList<>();
        Outbox outbox = Outbox.builder().table(table).build();
        try (Connection c = db.connection()) {
            c.setAutoCommit(false);
            for (int i = 0; i < count; i++) {
                ids.add(outbox.send(c, OutboxMessage.to("payments").key("k" + i).payload("{}")));
            }
            c.commit();
        }
        return ids;
    }

    private long unsent(String table) throws SQLException {
        try (Connection c = db.connection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM " + table + " WHERE sent_at IS NULL")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static OutboxRelay relay(DataSource ds, String table, RecordingPublisher broker) {
        return OutboxRelay.builder(ds, broker)
                .table(table)
                .shards(4)
                .batchSize(2)
                .lease(Duration.ofSeconds(10))
                .publishTimeout(Duration.ofSeconds(2))
                .build();
    }

    /**
     * On PostgreSQL every fetch is one prepared statement of two or three commands. A driver that sends a prepared
     * statement as one Parse message (pgjdbc-ng, and any driver that does not split on ';' itself) gets PostgreSQL's
     * "cannot insert multiple commands into a prepared statement": the relay must then send the commands one by one,
     * not fail every cycle (it did, publishing nothing, before the fallback). The DataSource below is pgjdbc answering
     * as such a driver does: the server's own error (SQLSTATE 42601) for a prepared statement with several commands.
     */
    @Test
    void relay_onAPostgresDriverThatDoesNotSplitStatements_stillPublishesAndMarks() throws Exception {
        String table = table();
        List<String> ids = send(table, 3);
        RecordingPublisher broker = new RecordingPublisher();
        OutboxRelay relay = relay(oneParsePerPreparedStatement(db.dataSource()), table, broker);
        try {
            int published = 0;
            for (int i = 0; i < 3; i++) {
                published += relay.relayOnce();
            }
            assertThat(published).isEqualTo(3);
            assertThat(broker.ids()).containsExactlyInAnyOrderElementsOf(ids);
            assertThat(unsent(table)).isZero();
        } finally {
            relay.close();
        }
    }

    /**
     * With pgjdbc in each query mode and with autosave, a full batch's mark rides with the next fetch, nothing is
     * lost or published twice, and the relay's {@code SET LOCAL} ends with its transaction.
     */
    @ParameterizedTest
    @ValueSource(strings = {"preferQueryMode=simple", "preferQueryMode=extendedCacheEverything", "autosave=always"})
    void relay_withPgjdbcOptions_marksEveryBatchOnce(String option) throws Exception {
        String table = table();
        List<String> ids = send(table, 5);
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setURL(db.url() + "&" + option + "&prepareThreshold=1");
        RecordingPublisher broker = new RecordingPublisher();
        OutboxRelay relay = relay(ds, table, broker);
        try {
            assertThat(relay.relayOnce()).isEqualTo(2);
            assertThat(unsent(table)).isEqualTo(5);
            assertThat(relay.relayOnce()).isEqualTo(2);
            assertThat(unsent(table)).isEqualTo(3);
            assertThat(relay.relayOnce()).isEqualTo(1);
            assertThat(unsent(table)).isZero();
            assertThat(relay.relayOnce()).isZero();
            // Five keys: a batch's messages go out as one wave, acknowledged in any order.
            assertThat(broker.ids()).containsExactlyInAnyOrderElementsOf(ids);
        } finally {
            relay.close();
        }
    }

    /** The planner setting holds for the fetch's transaction only; the pooled connection gets it back. */
    @Test
    void theFetchesPlannerSetting_endsWithItsTransaction() throws Exception {
        String table = table();
        send(table, 3);
        OutboxSql sql = new OutboxSql(Dialect.POSTGRESQL, table);
        try (Connection c = db.connection()) {
            c.setAutoCommit(false);
            try (PreparedStatement ps = c.prepareStatement(sql.markSent(1) + "; " + sql.due(4, 4))) {
                RelayDatabase.bind(
                        ps,
                        List.of(
                                1L,
                                c.createArrayOf("bigint", new Object[] {-1L}),
                                Long.MAX_VALUE - 1,
                                0,
                                1,
                                2,
                                3,
                                Long.MAX_VALUE - 1,
                                10));
                int rows = 0;
                try (ResultSet rs = OutboxSql.resultOfDue(ps)) {
                    while (rs.next()) {
                        rows++;
                    }
                }
                assertThat(rows).isEqualTo(3);
            }
            assertThat(setting(c)).isEqualTo("off");
            c.commit();
            assertThat(setting(c)).isEqualTo("on");
            c.setAutoCommit(true);
            assertThat(setting(c)).isEqualTo("on");
        }
    }

    private static String setting(Connection c) throws SQLException {
        try (Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT current_setting('enable_sort')")) {
            rs.next();
            return rs.getString(1);
        }
    }

    /** pgjdbc, refusing a prepared statement of several commands as PostgreSQL does when it gets them in one Parse. */
    private static DataSource oneParsePerPreparedStatement(DataSource real) {
        return new DataSource() {
            @Override
            public Connection getConnection() throws SQLException {
                return wrap(real.getConnection());
            }

            @Override
            public Connection getConnection(String user, String password) throws SQLException {
                return wrap(real.getConnection(user, password));
            }

            @Override
            public PrintWriter getLogWriter() throws SQLException {
                return real.getLogWriter();
            }

            @Override
            public void setLogWriter(PrintWriter out) throws SQLException {
                real.setLogWriter(out);
            }

            @Override
            public void setLoginTimeout(int seconds) throws SQLException {
                real.setLoginTimeout(seconds);
            }

            @Override
            public int getLoginTimeout() throws SQLException {
                return real.getLoginTimeout();
            }

            @Override
            public Logger getParentLogger() throws SQLFeatureNotSupportedException {
                return real.getParentLogger();
            }

            @Override
            public <T> T unwrap(Class<T> iface) throws SQLException {
                return real.unwrap(iface);
            }

            @Override
            public boolean isWrapperFor(Class<?> iface) throws SQLException {
                return real.isWrapperFor(iface);
            }
        };
    }

    private static Connection wrap(Connection c) {
        return (Connection) Proxy.newProxyInstance(
                PostgresRelayStatementTest.class.getClassLoader(), new Class<?>[] {Connection.class}, (p, m, args) -> {
                    if (m.getName().equals("prepareStatement")
                            && args != null
                            && args[0] instanceof String text
                            && text.contains(";")) {
                        throw new SQLException(
                                "ERROR: cannot insert multiple commands into a prepared statement", "42601");
                    }
                    try {
                        return m.invoke(c, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }
}
