package dev.idem.spring.outbox;

import dev.idem.outbox.Outbox;
import dev.idem.outbox.OutboxMessage;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Objects;
import javax.sql.DataSource;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.jdbc.support.SQLExceptionSubclassTranslator;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * {@link Outbox#send} on the connection of the Spring transaction in progress: call it from a {@code @Transactional}
 * method (an {@code @Idempotent} one included) and the message commits with the method's writes and the inbox mark, or
 * not at all. Thread-safe.
 *
 * <pre>{@code
 * @Transactional
 * public void pay(Order order) {
 *     payments.insert(order);
 *     outbox.send(OutboxMessage.to("payments").key(order.id()).payload(completedJson(order)));
 * }
 * }</pre>
 */
public final class SpringOutbox {
    private final Outbox outbox;
    private final DataSource dataSource;

    public SpringOutbox(Outbox outbox, DataSource dataSource) {
        this.outbox = Objects.requireNonNull(outbox, "outbox");
        this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    }

    /**
     * Inserts {@code message} in the current transaction and returns its message id.
     *
     * @throws IllegalStateException when no Spring transaction is active (the message would commit alone)
     * @throws org.springframework.dao.DataAccessException when the insert fails
     */
    public String send(OutboxMessage message) {
        if (!TransactionSynchronizationManager.isActualTransactionActive()) {
            throw new IllegalStateException("SpringOutbox.send needs an active transaction on the outbox's DataSource:"
                    + " call it from a @Transactional method (or in a TransactionTemplate), so that the message commits"
                    + " with the method's writes");
        }
        Connection connection = DataSourceUtils.getConnection(dataSource);
        try {
            return outbox.send(connection, message);
        } catch (SQLException e) {
            throw Objects.requireNonNull(new SQLExceptionSubclassTranslator().translate("outbox send", null, e));
        } finally {
            DataSourceUtils.releaseConnection(connection, dataSource);
        }
    }

    public Outbox outbox() {
        return outbox;
    }
}
