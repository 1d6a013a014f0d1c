package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Outcome;
import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * A driver that fails with an unchecked exception where a JDBC call should answer or throw an {@link SQLException}
 * (review: MariaDB Connector/J, a reply read one behind after a swallowed deadlock, threw {@code
 * ArrayIndexOutOfBoundsException} from the commit).
 */
class OwnTransactionDriverFailureTest {

    /** Review: the exception left {@code OwnTransaction.run}, which never throws, and the connection went back as it was. */
    @Test
    void anUncheckedExceptionFromTheCommit_isAnUnknownFate_andTheConnectionIsAborted() throws Exception {
        try (Connection h2 = DriverManager.getConnection("jdbc:h2:mem:driver-failure;DB_CLOSE_DELAY=-1")) {
            try (Statement s = h2.createStatement()) {
                s.execute("CREATE TABLE ledger (id VARCHAR(40) PRIMARY KEY)");
            }
            AtomicBoolean aborted = new AtomicBoolean();
            OwnTransaction own = OwnTransaction.builder(dataSource(committingFails(h2, aborted)))
                    .dialect(Dialect.H2)
                    .build();

            Outcome outcome = own.run(c -> {
                Statements.update(c, "INSERT INTO ledger VALUES ('p-1')", List.of());
                return Outcome.processed();
            });

            assertThat(outcome.type()).as(outcome.reason()).isEqualTo(Outcome.Type.IN_PROGRESS);
            assertThat(outcome.reason()).contains("ArrayIndexOutOfBoundsException");
            assertThat(aborted)
                    .as("the connection was aborted, not handed back as it was")
                    .isTrue();
        }
    }

    /** {@code connection}, whose commit (and the auto-commit switch that commits) fails as the desynced driver did. */
    private static Connection committingFails(Connection connection, AtomicBoolean aborted) {
        return (Connection) Proxy.newProxyInstance(
                Connection.class.getClassLoader(), new Class<?>[] {Connection.class}, (proxy, method, args) -> {
                    String name = method.getName();
                    if (name.equals("commit") || (name.equals("setAutoCommit") && (Boolean) args[0])) {
                        throw new ArrayIndexOutOfBoundsException("Index 3 out of bounds for length 3");
                    }
                    if (name.equals("abort")) {
                        aborted.set(true);
                        return null;
                    }
                    if (name.equals("close")) {
                        return null; // the test's connection stays open
                    }
                    try {
                        return method.invoke(connection, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    private static DataSource dataSource(Connection connection) {
        return (DataSource) Proxy.newProxyInstance(
                DataSource.class.getClassLoader(), new Class<?>[] {DataSource.class}, (proxy, method, args) -> {
                    switch (method.getName()) {
                        case "getConnection":
                            return connection;
                        case "getLogWriter":
                            return new PrintWriter(System.err);
                        case "getParentLogger":
                            return Logger.getGlobal();
                        default:
                            return null;
                    }
                });
    }
}
