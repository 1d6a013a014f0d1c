package dev.idem.jdbc;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.CallableStatement;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The connection a handler gets on MariaDB/MySQL and H2, which roll a deadlock victim's whole transaction back, marks
 * included: it notes whether anything that could have ended the transaction went by. A database that rolls the
 * transaction back says so to the statement that ran into it, so when no call on this connection (or on a statement,
 * result set or metadata it gave out) failed other than by an integrity constraint violation ({@link
 * #failsTheStatementOnly}), and the handler took no driver object out of reach ({@code unwrap}) nor
 * ended the transaction itself (a {@code Connection} call, or SQL text that may end it: see {@link
 * #mayEndTheTransaction}), the marks are provably still there and need no counting before the commit.
 */
final class WatchedConnection {
    private static final Set<Class<?>> WATCHED = Set.of(
            Connection.class,
            Statement.class,
            PreparedStatement.class,
            CallableStatement.class,
            ResultSet.class,
            DatabaseMetaData.class);
    /**
     * The interface methods already opened: {@code Method.invoke} otherwise checks the caller's access on every call,
     * and its one-entry cache misses whenever the target class changes (connection, statement, result set), which
     * put access checks among the handler thread's hottest frames.
     */
    private static final Map<Method, Method> OPENED = new ConcurrentHashMap<>();

    /**
     * The connection's calls that end the transaction, or may: a procedure that commits or rolls back, and {@code
     * isValid}, in which MariaDB's driver reads an error left on the socket (a deadlock that ended a streamed read)
     * and answers false without throwing.
     */
    private static final Set<String> MAY_END_THE_TRANSACTION = Set.of(
            "commit", "rollback", "setAutoCommit", "close", "abort", "releaseSavepoint", "prepareCall", "isValid");
    /** The calls whose first argument is SQL text. */
    private static final Set<String> TAKES_SQL =
            Set.of("prepareStatement", "execute", "executeQuery", "executeUpdate", "executeLargeUpdate", "addBatch");
    /** The statements that cannot end a transaction: triggers and stored functions may not commit or roll back. */
    private static final List<String> PLAIN_STATEMENTS =
            List.of("SELECT", "INSERT", "UPDATE", "DELETE", "REPLACE", "WITH", "VALUES");

    private final Connection connection;
    private volatile boolean unsure;

    WatchedConnection(Connection connection) {
        this.connection = watch(connection, Connection.class);
    }

    /** What the handler gets. */
    Connection connection() {
        return connection;
    }

    /** True when nothing went by that could have rolled the transaction back. */
    boolean provablyIntact() {
        return !unsure;
    }

    private <T> T watch(Object target, Class<T> type) {
        return type.cast(Proxy.newProxyInstance(
                WatchedConnection.class.getClassLoader(), new Class<?>[] {type}, (proxy, method, args) -> {
                    String name = method.getName();
                    if (name.equals("unwrap")
                            || (type == Connection.class && MAY_END_THE_TRANSACTION.contains(name))
                            || (args != null
                                    && args.length > 0
                                    && args[0] instanceof String sql
                                    && TAKES_SQL.contains(name)
                                    && mayEndTheTransaction(sql))) {
                        unsure = true;
                    }
                    Object result;
                    try {
                        result = opened(method).invoke(target, args);
                    } catch (InvocationTargetException e) {
                        Throwable cause = e.getCause();
                        if (!(cause instanceof SQLException failed && failsTheStatementOnly(failed))) {
                            unsure = true;
                        }
                        throw cause == null ? e : cause;
                    }
                    Class<?> returned = method.getReturnType();
                    return result != null && WATCHED.contains(returned)
                            ? watch(result, kindOf(result, returned))
                            : result;
                }));
    }

    /**
     * The most specific watched interface of {@code result}: a prepared statement stays one where a method declares a
     * {@code Statement} ({@code ResultSet.getStatement()}).
     */
    private static Class<?> kindOf(Object result, Class<?> declared) {
        if (declared == Statement.class) {
            if (result instanceof CallableStatement) {
                return CallableStatement.class;
            }
            if (result instanceof PreparedStatement) {
                return PreparedStatement.class;
            }
        }
        return declared;
    }

    /**
     * An integrity constraint violation (SQLState class 23: a duplicate key, a foreign key, a NOT NULL column), which
     * MariaDB/MySQL and H2 answer by rolling back the failed statement alone, never the transaction: a handler that
     * catches it (a guard that tells a duplicate by its unique key does) leaves the transaction whole.
     */
    static boolean failsTheStatementOnly(SQLException e) {
        String state = e.getSQLState();
        return state != null && state.startsWith("23");
    }

    /**
     * True unless {@code sql} is one statement that starts with a keyword of {@link #PLAIN_STATEMENTS}, after blanks,
     * parentheses and comments ({@code /* … *}{@code /}, {@code -- …}: Hibernate's {@code use_sql_comments}): text such
     * as {@code ROLLBACK}, {@code COMMIT}, {@code START TRANSACTION}, {@code SET autocommit}, DDL (which commits on
     * MariaDB/MySQL), {@code LOCK TABLES}, {@code XA} or a {@code CALL} of a procedure that rolls back ends the
     * transaction with no failing call and no {@code Connection} method to show it. Errs on the side of counting: an
     * executable comment ({@code /*!}, {@code /*M!}), one holding a {@code /} (H2 nests them) or unterminated, or a
     * semicolon inside a literal counts as such text too. Not seen: an H2 Java function alias that commits, called from
     * a {@code SELECT}.
     */
    static boolean mayEndTheTransaction(String sql) {
        int start = statementStart(sql);
        if (start < 0) {
            return true;
        }
        int semicolon = sql.indexOf(';', start);
        if (semicolon >= 0 && !sql.substring(semicolon + 1).isBlank()) {
            return true; // a second statement
        }
        for (String keyword : PLAIN_STATEMENTS) {
            int end = start + keyword.length();
            if (sql.regionMatches(true, start, keyword, 0, keyword.length())
                    && (end == sql.length() || !Character.isLetterOrDigit(sql.charAt(end)))) {
                return false;
            }
        }
        return true;
    }

    /** Where the first keyword of {@code sql} starts, past blanks, parentheses and plain comments; -1 if unsure. */
    private static int statementStart(String sql) {
        int i = 0;
        while (i < sql.length()) {
            char c = sql.charAt(i);
            if (Character.isWhitespace(c) || c == '(') {
                i++;
            } else if (sql.startsWith("/*", i)) {
                int end = sql.indexOf("*/", i + 2);
                String body = end < 0 ? "" : sql.substring(i + 2, end);
                if (end < 0 || body.startsWith("!") || body.startsWith("M!") || body.contains("/")) {
                    return -1; // unterminated, executed by MariaDB/MySQL, or maybe nested (H2 nests them: "/*/*/")
                }
                i = end + 2;
            } else if (sql.startsWith("--", i) && i + 2 < sql.length() && Character.isWhitespace(sql.charAt(i + 2))) {
                i = lineEnd(sql, i);
                if (i < 0) {
                    return -1; // a lone \r: H2 ends the comment there, MariaDB/MySQL at the next \n
                }
            } else {
                return i;
            }
        }
        return i;
    }

    /** Past the end of the line comment at {@code from}: its {@code \n} or {@code \r\n}; -1 at a lone {@code \r}. */
    private static int lineEnd(String sql, int from) {
        int i = from;
        while (i < sql.length() && sql.charAt(i) != '\n' && sql.charAt(i) != '\r') {
            i++;
        }
        if (i < sql.length() && sql.charAt(i) == '\r') {
            return sql.startsWith("\r\n", i) ? i + 2 : -1;
        }
        return Math.min(i + 1, sql.length());
    }

    /**
     * The opened copy of {@code method}. Each proxy class hands its handler its own copy of an interface method
     * ({@code Statement.close()} through a statement and through a prepared statement), equal but opened apart, so the
     * copies are keyed by equality and the first one opened serves them all.
     */
    static Method opened(Method method) {
        return OPENED.computeIfAbsent(method, m -> {
            m.setAccessible(true); // a public method of java.sql: skips the access check per call
            return m;
        });
    }
}
