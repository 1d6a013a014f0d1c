package dev.idem.outbox;

import dev.idem.ConfigurationException;
import dev.idem.id.MessageIdFormat;
import dev.idem.id.MessageIdGenerator;
import dev.idem.jdbc.Dialect;
import dev.idem.jdbc.Schema;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Clock;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import org.jspecify.annotations.Nullable;

/**
 * Writes outgoing messages into the outbox table <b>on the caller's connection</b>, inside the caller's transaction:
 * a {@code JdbcInbox} handler's, a business guard's, a Spring {@code @Transactional} method's. The message commits with
 * the inbox mark and the handler's writes, or not at all; {@link OutboxRelay} publishes it once committed.
 *
 * <pre>{@code
 * Outbox outbox = Outbox.builder().build();
 * inbox.handle(delivery, c -> {
 *     charge(c, order);
 *     outbox.send(c, OutboxMessage.to("payments").key(order.id()).payload(completedJson));
 *     return Outcome.processed();
 * });
 * }</pre>
 *
 * <p>Each message gets its message id at insert ({@link #send} returns it): an {@code idem-ids} id by default, or the
 * one set with {@link OutboxMessage#withMessageId}. The id never changes, and every publisher carries it as the
 * message's idempotency key, so the next service's guard recognises each republication. Immutable and thread-safe.
 */
public final class Outbox {
    private final String table;
    private final MessageIdGenerator ids;
    private final Clock clock;
    private final String insert;
    /**
     * PostgreSQL's insert, which also wakes a relay that waits idle at once rather than at its next poll, in the same
     * round trip (and does not notify while no relay waits: see {@link OutboxSql#insertNotifying}). PostgreSQL delivers
     * the notification at the caller's commit and drops it at a rollback, and folds a transaction's notifications of
     * one channel into one. Sent here rather than by a trigger in the shipped DDL: tables created before it wake their
     * relays too, without a migration; rows inserted by other code wait for the poll.
     */
    private final String insertNotifying;

    private volatile @Nullable Dialect checked;

    private Outbox(Builder b) {
        this.table = b.table;
        this.ids = b.ids != null ? b.ids : defaultIds();
        this.clock = b.clock;
        this.insert = OutboxSql.insert(table);
        this.insertNotifying = OutboxSql.insertNotifying(table);
    }

    public static Builder builder() {
        return new Builder();
    }

    /**
     * Inserts {@code message} on {@code connection}, in its open transaction, and returns the message's id. Nothing is
     * committed here: the caller's commit publishes it (through the relay), its rollback removes it.
     *
     * @throws IllegalArgumentException when the connection is in auto-commit mode (the message would be committed
     *     alone, before the effect it reports)
     * @throws SQLException from the insert, e.g. a message id used twice; on PostgreSQL the caller's transaction is then
     *     aborted: let the exception end the transaction
     */
    public String send(Connection connection, OutboxMessage message) throws SQLException {
        Objects.requireNonNull(connection, "connection");
        Objects.requireNonNull(message, "message");
        if (connection.getAutoCommit()) {
            throw new IllegalArgumentException(
                    "Outbox.send: the connection is in autoCommit mode, so the message would"
                            + " commit alone, before (or without) the effect it reports: pass the connection of the open"
                            + " transaction (the one JdbcInbox.handle hands the handler, or Spring's transactional connection)");
        }
        checkDialect(connection);
        String id = message.messageId().orElseGet(ids::nextString);
        long now = clock.millis();
        boolean notifying = checked == Dialect.POSTGRESQL;
        try (PreparedStatement ps = connection.prepareStatement(notifying ? insertNotifying : insert)) {
            ps.setString(1, id);
            ps.setString(2, message.destination());
            ps.setString(3, message.key());
            ps.setInt(4, KeyHash.of(message.key()));
            ps.setString(5, HeaderCodec.encode(message.headers()));
            ps.setBytes(6, message.payloadUnsafe());
            ps.setLong(7, now);
            if (notifying) {
                ps.setString(8, OutboxSql.channel(table));
            }
            ps.execute();
        }
        return id;
    }

    /** The outbox table's name. */
    public String table() {
        return table;
    }

    private void checkDialect(Connection c) throws SQLException {
        if (checked == null) {
            Dialect d = Schema.detect(c);
            if (d == Dialect.MYSQL) {
                throw new ConfigurationException("the outbox runs on PostgreSQL, MariaDB and H2; MySQL is not tested");
            }
            checked = d;
        }
    }

    /**
     * A generator with a random node id: two outboxes that draw the same one and issue in the same millisecond make
     * the second insert fail on the table's unique message id (its transaction rolls back and is retried), never a
     * silent merge. Give every producer a leased node id ({@link Builder#ids}) to avoid even that.
     */
    private static MessageIdGenerator defaultIds() {
        MessageIdGenerator.Builder b = MessageIdGenerator.builder().prefix("OUTBOX");
        int max = MessageIdFormat.defaults().maxNodeId();
        return b.nodeId(ThreadLocalRandom.current().nextInt(max + 1)).build();
    }

    /** Builds an {@link Outbox}. Each setter checks its value at once. */
    public static final class Builder {
        private String table = OutboxSchema.DEFAULT_TABLE;
        private @Nullable MessageIdGenerator ids;
        private Clock clock = Clock.systemUTC();

        private Builder() {}

        /** The outbox table. Default {@code idem_outbox}; its shard table is {@code <table>_shards}. */
        public Builder table(String table) {
            this.table = OutboxSchema.validateTable(table);
            return this;
        }

        /**
         * Issues the message ids ({@link MessageIdGenerator#nextString()}). Default: prefix {@code OUTBOX}, a random
         * node id; give it a leased node id ({@code MessageIdGenerator.builder().nodeIdLease(...)}) in production.
         */
        public Builder ids(MessageIdGenerator ids) {
            this.ids = Objects.requireNonNull(ids, "ids");
            return this;
        }

        /** Stamps {@code created_at}. Default: the system UTC clock. */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        public Outbox build() {
            return new Outbox(this);
        }
    }
}
