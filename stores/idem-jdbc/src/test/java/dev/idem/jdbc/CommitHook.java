package dev.idem.jdbc;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import javax.sql.DataSource;

/**
 * A data source whose connections run a hook just before each commit (e.g. to cut the link): {@link
 * Connection#commit()}, or {@code setAutoCommit(true)}, which commits an open transaction and is how Idem commits on a
 * connection the pool handed out in auto-commit.
 */
final class CommitHook {
    private CommitHook() {}

    static DataSource around(DataSource target, Runnable beforeCommit) {
        return (DataSource) Proxy.newProxyInstance(
                CommitHook.class.getClassLoader(), new Class<?>[] {DataSource.class}, (proxy, method, args) -> {
                    Object result = invoke(method, target, args);
                    return result instanceof Connection c && method.getName().equals("getConnection")
                            ? hooked(c, beforeCommit)
                            : result;
                });
    }

    private static Connection hooked(Connection target, Runnable beforeCommit) {
        return (Connection) Proxy.newProxyInstance(
                CommitHook.class.getClassLoader(), new Class<?>[] {Connection.class}, (proxy, method, args) -> {
                    if (method.getName().equals("commit")
                            || (method.getName().equals("setAutoCommit") && Boolean.TRUE.equals(args[0]))) {
                        beforeCommit.run();
                    }
                    return invoke(method, target, args);
                });
    }

    private static Object invoke(java.lang.reflect.Method method, Object target, Object[] args) throws Throwable {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
