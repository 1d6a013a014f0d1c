package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.Delivery;
import dev.idem.Outcome;
import dev.idem.jdbc.JdbcInbox;
import dev.idem.testsupport.TestDatabase;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.jdbc.support.JdbcTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The application's transaction on HikariCP and the local PostgreSQL, the inbox joined to it as {@code @Idempotent}
 * joins it, the database ending the session at the last moment before Spring's commit: as the inbox releases its
 * savepoint. HikariCP marks the connection broken and answers every later call with a {@code SQLException("Connection
 * is closed")} without SQLState; the failed commit must still be an unreachable database, never the handler's failure
 * (KafkaListenerFaultsTest's outage case saw one such {@code FAILED} retry in a full run).
 */
class SessionEndedBeforeTheCommitTest {
    static final TestDatabase DB = TestDatabase.postgres("session_ended_before_commit");
    static HikariDataSource pool;
    static JdbcInbox inbox;

    @BeforeAll
    static void start() {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(DB.url());
        config.setMaximumPoolSize(2);
        pool = new HikariDataSource(config);
        inbox = JdbcInbox.builder(pool)
                .namespace("ended")
                .createTableIfMissing(true)
                .build();
    }

    @AfterAll
    static void stop() {
        pool.close();
        DB.close();
    }

    @Test
    void theSessionEndedAsTheInboxReleasesItsSavepoint_isAnUnreachableDatabase_neverTheHandlersFailure() {
        TransactionTemplate tx = new TransactionTemplate(new JdbcTransactionManager(pool));
        Throwable thrown = catchThrowable(() -> tx.executeWithoutResult(status -> {
            Connection c = DataSourceUtils.getConnection(pool);
            inbox.handle(endingAtRelease(c), Delivery.of("payment-" + UUID.randomUUID()), conn -> Outcome.processed());
        }));

        assertThat(thrown).as("the transaction did not commit").isNotNull();
        assertThat(SpringFailures.classifier().classify(thrown).type())
                .as("%s", thrown)
                .isEqualTo(Outcome.Type.IN_PROGRESS);
    }

    /** {@code c}, whose {@code releaseSavepoint} first has the database end the session. */
    private static Connection endingAtRelease(Connection c) {
        return (Connection) Proxy.newProxyInstance(
                Connection.class.getClassLoader(), new Class<?>[] {Connection.class}, (proxy, method, args) -> {
                    if (method.getName().equals("releaseSavepoint")) {
                        terminate(c.unwrap(PGConnection.class).getBackendPID());
                    }
                    try {
                        return method.invoke(c, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    private static void terminate(int pid) throws SQLException {
        try (Connection admin = DB.connection();
                PreparedStatement s = admin.prepareStatement("SELECT pg_terminate_backend(?, 5000)")) {
            s.setInt(1, pid);
            s.execute();
        }
    }
}
