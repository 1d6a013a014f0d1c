package dev.idem.jdbc;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.testsupport.TestDatabase;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;

/**
 * One test database per test class, opened on first use and dropped when the test JVM exits. The contract suites
 * run under both JUnit Jupiter and jqwik, whose class lifecycles do not nest, so neither engine's before/after-class
 * hook can own the database.
 */
final class PerClassDatabase {
    private static final Map<Class<?>, TestDatabase> OPEN = new ConcurrentHashMap<>();
    private static final Map<Class<?>, HikariDataSource> MANUAL_COMMIT = new ConcurrentHashMap<>();

    private PerClassDatabase() {}

    static TestDatabase of(Class<?> testClass, Dialect dialect) {
        return OPEN.computeIfAbsent(testClass, c -> {
            TestDatabase db = switch (dialect) {
                case POSTGRESQL -> TestDatabase.postgres(c.getSimpleName());
                case MARIADB, MYSQL -> TestDatabase.mariadb(c.getSimpleName());
                case H2 -> TestDatabase.h2(c.getSimpleName());
            };
            Runtime.getRuntime().addShutdownHook(new Thread(db::close, "drop-" + db.name()));
            return db;
        });
    }

    /** A pool on the test class's database that hands out connections with auto-commit off. */
    static DataSource manualCommitPool(Class<?> testClass, Dialect dialect) {
        return MANUAL_COMMIT.computeIfAbsent(testClass, c -> {
            HikariConfig config = new HikariConfig();
            config.setJdbcUrl(of(c, dialect).url());
            config.setMaximumPoolSize(4);
            config.setAutoCommit(false);
            HikariDataSource pool = new HikariDataSource(config);
            Runtime.getRuntime().addShutdownHook(new Thread(pool::close, "close-manual-commit-pool"));
            return pool;
        });
    }
}
