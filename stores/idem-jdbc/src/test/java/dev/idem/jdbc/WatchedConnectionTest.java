package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.CallableStatement;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class WatchedConnectionTest {

    /**
     * Every proxy class hands its handler its own copy of an interface method: {@code Statement.close()} arrives as one
     * {@code Method} through a statement and as another, equal one through a prepared or callable statement. Opening
     * only the first copy left the others checking the caller's access on every call.
     */
    @Test
    @SuppressWarnings("deprecation") // isAccessible: the flag that setAccessible sets, which canAccess does not show
    void statementMethod_reachedThroughEveryStatementKind_isInvokedOpened() throws Exception {
        List<Method> copies = new ArrayList<>();
        for (Class<?> kind : List.of(Statement.class, PreparedStatement.class, CallableStatement.class)) {
            Statement statement = (Statement) Proxy.newProxyInstance(
                    getClass().getClassLoader(), new Class<?>[] {kind}, (proxy, method, args) -> {
                        copies.add(method);
                        return null;
                    });
            statement.close();
        }
        assertThat(copies).hasSize(3).allMatch(copies.get(0)::equals);
        assertThat(copies.get(1)).isNotSameAs(copies.get(0));

        for (int i = 0; i < copies.size(); i++) {
            assertThat(WatchedConnection.opened(copies.get(i)).isAccessible())
                    .as("%s as the proxy of %s hands it", copies.get(i), i)
                    .isTrue();
        }
    }

    @Test
    void statementsOfEveryKind_throughTheWatchedConnection_stillWork() throws Exception {
        try (Connection raw = DriverManager.getConnection("jdbc:h2:mem:watched")) {
            try (Statement s = raw.createStatement()) {
                s.execute("create table t (v int)");
            }
            WatchedConnection watched = new WatchedConnection(raw);
            Connection c = watched.connection();
            try (Statement s = c.createStatement()) {
                s.executeUpdate("insert into t values (6)");
            }
            try (PreparedStatement p = c.prepareStatement("insert into t values (?)")) {
                p.setInt(1, 7);
                p.executeUpdate();
            }
            assertThat(watched.provablyIntact()).isTrue();
            try (CallableStatement call = c.prepareCall("select max(v) from t");
                    ResultSet rs = call.executeQuery()) {
                assertThat(rs.next()).isTrue();
                assertThat(rs.getInt(1)).isEqualTo(7);
            }
            assertThat(watched.provablyIntact())
                    .as("a call may run a procedure that ends the transaction")
                    .isFalse();
        }
    }

    /**
     * Review: a result set's {@code getStatement()} is declared to return a {@code Statement}, and the watch handed out a
     * proxy of that interface only, so a handler that casts it back to the prepared statement it ran failed; with an
     * integrity violation caught, the transaction stays vouched for.
     */
    @Test
    void aStatementReachedThroughItsResultSet_keepsItsKind_andACaughtDuplicateKeepsTheWatchSure() throws Exception {
        try (Connection raw = DriverManager.getConnection("jdbc:h2:mem:watched-kinds")) {
            try (Statement s = raw.createStatement()) {
                s.execute("create table t (v int primary key)");
                s.execute("insert into t values (1)");
            }
            WatchedConnection watched = new WatchedConnection(raw);
            Connection c = watched.connection();
            try (PreparedStatement p = c.prepareStatement("select v from t where v = ?")) {
                p.setInt(1, 1);
                try (ResultSet rs = p.executeQuery()) {
                    assertThat(rs.getStatement()).isInstanceOf(PreparedStatement.class);
                    assertThat(rs.getStatement()
                                    .getConnection()
                                    .getMetaData()
                                    .getConnection()
                                    .createStatement())
                            .isInstanceOf(Statement.class);
                }
            }
            try (PreparedStatement p = c.prepareStatement("insert into t values (1)")) {
                p.executeUpdate();
            } catch (java.sql.SQLException duplicate) {
                assertThat(duplicate.getSQLState()).startsWith("23");
            }
            assertThat(watched.provablyIntact()).isTrue();
        }
    }
}
