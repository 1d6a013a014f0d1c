package dev.idem.spring;

import dev.idem.Guard;
import dev.idem.IdempotencyListener;
import dev.idem.jdbc.JdbcInbox;
import dev.idem.spi.IdempotencyStore;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.DisposableBean;

/**
 * The guards behind {@link Idempotent}, one per namespace, built on first use from the {@code idem.*} properties and
 * every {@link IdemGuardCustomizer}: a {@link JdbcInbox} on the application's {@code DataSource} for calls inside a
 * transaction, a {@link Guard} on the lease store for the others. Thread-safe.
 */
public final class IdempotentGuards implements DisposableBean {
    private final @Nullable DataSource dataSource;
    private final @Nullable IdempotencyStore leaseStore;
    private final IdemProperties properties;
    private final IdempotencyListener listener;
    private final List<IdemGuardCustomizer> customizers;
    private final Map<String, JdbcInbox> inboxes = new ConcurrentHashMap<>();
    private final Map<String, Guard> guards = new ConcurrentHashMap<>();

    public IdempotentGuards(
            @Nullable DataSource dataSource,
            @Nullable IdempotencyStore leaseStore,
            IdemProperties properties,
            IdempotencyListener listener,
            List<IdemGuardCustomizer> customizers) {
        this.dataSource = dataSource;
        this.leaseStore = leaseStore;
        this.properties = properties;
        this.listener = listener;
        this.customizers = List.copyOf(customizers);
    }

    /** The data source whose transactions {@link Idempotent} joins, if the application has one. */
    public @Nullable DataSource dataSource() {
        return dataSource;
    }

    /** The inbox of {@code namespace}, on {@link #dataSource()}. */
    public JdbcInbox inbox(String namespace) {
        DataSource ds = dataSource;
        if (ds == null) {
            throw new IllegalStateException("no DataSource: an inbox needs one");
        }
        return inboxes.computeIfAbsent(namespace, ns -> {
            IdemProperties.Jdbc jdbc = properties.getJdbc();
            JdbcInbox.Builder builder = JdbcInbox.builder(ds)
                    .namespace(ns)
                    .table(jdbc.getTable())
                    .retention(properties.getRetention())
                    .lockWait(jdbc.getLockWait())
                    .createTableIfMissing(jdbc.isCreateTableIfMissing())
                    .listener(listener);
            customizers.forEach(c -> c.customize(ns, builder));
            return builder.build();
        });
    }

    /** The lease store's description ({@code IdempotencyStore.describe()}), or {@code none}. */
    public String leaseStoreDescription() {
        IdempotencyStore store = leaseStore;
        return store == null ? "none" : store.describe();
    }

    /** The lease guard of {@code namespace}, or null when there is no lease store. */
    public @Nullable Guard guard(String namespace) {
        IdempotencyStore store = leaseStore;
        if (store == null) {
            return null;
        }
        return guards.computeIfAbsent(namespace, ns -> {
            Guard.Builder builder = Guard.builder(store)
                    .namespace(ns)
                    .lease(properties.getLease())
                    .retention(properties.getRetention())
                    .listener(listener);
            customizers.forEach(c -> c.customize(ns, builder));
            return builder.build();
        });
    }

    @Override
    public void destroy() {
        guards.values().forEach(Guard::close);
    }
}
