package dev.idem.jdbc;

import java.lang.reflect.Method;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * pgjdbc's client-side transaction state ({@code BaseConnection.getTransactionState()}: IDLE, OPEN or FAILED), read
 * by reflection so that idem-jdbc needs no PostgreSQL driver at compile time. Empty when the connection is not
 * pgjdbc's.
 */
final class PgTransactionState {
    private static final @Nullable Class<?> BASE_CONNECTION = load("org.postgresql.core.BaseConnection");
    private static final @Nullable Method GET_STATE = method(BASE_CONNECTION, "getTransactionState");

    private PgTransactionState() {}

    static Optional<Boolean> isAborted(Connection c) throws SQLException {
        if (BASE_CONNECTION == null || GET_STATE == null || !c.isWrapperFor(BASE_CONNECTION)) {
            return Optional.empty();
        }
        try {
            Object state = GET_STATE.invoke(c.unwrap(BASE_CONNECTION));
            return Optional.of("FAILED".equals(String.valueOf(state)));
        } catch (ReflectiveOperationException e) {
            return Optional.empty();
        }
    }

    private static @Nullable Class<?> load(String name) {
        try {
            return Class.forName(name, false, PgTransactionState.class.getClassLoader());
        } catch (ClassNotFoundException | LinkageError e) {
            return null;
        }
    }

    private static @Nullable Method method(@Nullable Class<?> type, String name) {
        try {
            return type == null ? null : type.getMethod(name);
        } catch (NoSuchMethodException e) {
            return null;
        }
    }
}
