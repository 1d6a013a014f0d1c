package dev.idem.jdbc;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;

/**
 * A data source that counts the transactions its connections commit: each {@link Connection#commit()}, and each
 * statement run in auto-commit mode (which commits alone) but a {@code SELECT}, which has nothing to commit.
 * Rollbacks are not counted.
 */
final class CommitCounter {
    private final AtomicLong commits = new AtomicLong();
    private final DataSource dataSource;

    CommitCounter(DataSource target) {
        this.dataSource = (DataSource) proxy(DataSource.class, target, null, "");
    }

    DataSource dataSource() {
        return dataSource;
    }

    long commits() {
        return commits.get();
    }

    /** {@code sql}: the text a statement was prepared with ("" for other objects). */
    private Object proxy(Class<?> type, Object target, Connection connection, String sql) {
        return Proxy.newProxyInstance(
                CommitCounter.class.getClassLoader(), new Class<?>[] {type}, (self, method, args) -> {
                    String text = args != null && args.length > 0 && args[0] instanceof String given ? given : sql;
                    if (ends(method, target, connection, args) && !isSelect(text)) {
                        commits.incrementAndGet();
                    }
                    Object result = invoke(method, target, args);
                    if (result instanceof Connection c && method.getName().equals("getConnection")) {
                        return proxy(Connection.class, c, c, "");
                    }
                    if (result instanceof Statement s && target instanceof Connection) {
                        return proxy(statementType(s), s, connection, text);
                    }
                    return result;
                });
    }

    private static boolean isSelect(String sql) {
        return sql.stripLeading().regionMatches(true, 0, "SELECT", 0, 6);
    }

    /** Whether the call ends a transaction: a commit, auto-commit switched back on, a statement in auto-commit. */
    private static boolean ends(Method method, Object target, Connection connection, Object[] args)
            throws java.sql.SQLException {
        String name = method.getName();
        if (target instanceof Connection) {
            return name.equals("commit")
                    || (name.equals("setAutoCommit") && Boolean.TRUE.equals(args[0]) && !connection.getAutoCommit());
        }
        return target instanceof Statement && name.startsWith("execute") && connection.getAutoCommit();
    }

    private static Class<?> statementType(Statement s) {
        if (s instanceof java.sql.CallableStatement) {
            return java.sql.CallableStatement.class;
        }
        return s instanceof java.sql.PreparedStatement ? java.sql.PreparedStatement.class : Statement.class;
    }

    private static Object invoke(Method method, Object target, Object[] args) throws Throwable {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
