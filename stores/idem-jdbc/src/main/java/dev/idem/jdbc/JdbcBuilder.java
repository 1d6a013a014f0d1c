package dev.idem.jdbc;

import java.time.Clock;
import java.util.Objects;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * The settings every JDBC entry point shares: the table, the dialect, the clock and whether to create the table.
 * {@code B} is the concrete builder. Each setter checks its value at once.
 */
public abstract class JdbcBuilder<B extends JdbcBuilder<B>> {
    final DataSource dataSource;
    String table;

    @Nullable
    Dialect dialect;

    Clock clock = Clock.systemUTC();
    boolean databaseClock;
    boolean createTableIfMissing;

    JdbcBuilder(DataSource dataSource, String defaultTable) {
        this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        this.table = defaultTable;
    }

    /** The table: 1 to 48 of {@code [A-Za-z0-9_]}, starting with a letter or underscore; no schema prefix. */
    public B table(String table) {
        this.table = Schema.validateTable(table);
        return self();
    }

    /** The SQL dialect. Default: detected from {@code DatabaseMetaData.getDatabaseProductName()}. */
    public B dialect(Dialect dialect) {
        this.dialect = Objects.requireNonNull(dialect, "dialect");
        return self();
    }

    /** The clock for lease deadlines and retention. Default: system UTC. Ignored with the database clock. */
    public B clock(Clock clock) {
        this.clock = Objects.requireNonNull(clock, "clock");
        return self();
    }

    /**
     * Take "now" from the database (one extra query per operation) instead of this JVM, so that consumers on
     * machines with skewed clocks agree on when a lease or mark ends. Default false.
     */
    public B useDatabaseClock(boolean on) {
        this.databaseClock = on;
        return self();
    }

    /** Create the table (and its index and sequence) at {@code build()} if they are missing. Default false. */
    public B createTableIfMissing(boolean on) {
        this.createTableIfMissing = on;
        return self();
    }

    /** The dialect set, or detected on one connection. */
    Dialect resolveDialect(String store) {
        return dialect != null ? dialect : Schema.detect(dataSource, store);
    }

    @SuppressWarnings("unchecked")
    private B self() {
        return (B) this;
    }
}
