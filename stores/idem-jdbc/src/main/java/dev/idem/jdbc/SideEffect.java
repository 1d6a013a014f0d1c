package dev.idem.jdbc;

import java.sql.Connection;
import java.sql.SQLException;

/** Work that runs on the guard's connection, in its transaction, only when the guarded change applied. */
@FunctionalInterface
public interface SideEffect {
    /** Does nothing. */
    SideEffect NONE = c -> {};

    void run(Connection connection) throws SQLException;
}
