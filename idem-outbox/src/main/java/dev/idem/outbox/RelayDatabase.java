package dev.idem.outbox;

import dev.idem.Outcome;
import dev.idem.StoreUnavailableException;
import dev.idem.jdbc.OwnTransaction;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The relay's database work, each piece in a transaction of its own on idem-jdbc's one owned-transaction path
 * ({@link OwnTransaction}: rollback on any failure, the aborted-transaction check, deadlocks run again, a commit of
 * unknown fate reported as such). A piece that did not commit throws {@link StoreUnavailableException}; the relay
 * then publishes nothing more of its batch and its unmarked messages are published again later, with the same ids.
 */
final class RelayDatabase {
    @FunctionalInterface
    interface Work<T> {
        T run(Connection c) throws SQLException;
    }

    private final OwnTransaction transactions;
    private final String store;

    RelayDatabase(OwnTransaction transactions, String store) {
        this.transactions = transactions;
        this.store = store;
    }

    <T> T run(String what, Work<T> work) {
        Object[] result = new Object[1];
        Outcome outcome = transactions.run(c -> {
            result[0] = work.run(c);
            return Outcome.processed();
        });
        if (outcome.type() != Outcome.Type.PROCESSED) {
            throw new StoreUnavailableException(
                    store,
                    what + " did not commit: " + outcome.reason(),
                    outcome.cause().orElse(null));
        }
        @SuppressWarnings("unchecked")
        T t = (T) result[0];
        return t;
    }

    /** Runs one update statement with {@code parameters}; answers its update count. */
    int update(String what, String sql, List<? extends @Nullable Object> parameters) {
        return run(what, c -> update(c, sql, parameters));
    }

    static int update(Connection c, String sql, List<? extends @Nullable Object> parameters) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            bind(ps, parameters);
            return ps.executeUpdate();
        }
    }

    static void bind(PreparedStatement ps, List<? extends @Nullable Object> parameters) throws SQLException {
        for (int i = 0; i < parameters.size(); i++) {
            ps.setObject(i + 1, parameters.get(i));
        }
    }
}
