package dev.idem.outbox;

import dev.idem.ConfigurationException;
import dev.idem.RetryPolicy;
import dev.idem.StoreUnavailableException;
import dev.idem.jdbc.Dialect;
import dev.idem.jdbc.OwnTransaction;
import dev.idem.jdbc.Schema;
import dev.idem.outbox.spi.OutboxPublisher;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.function.LongSupplier;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Publishes committed outbox messages through an {@link OutboxPublisher}, marks them sent, parks the ones the broker
 * keeps refusing and purges sent ones after the retention.
 *
 * <pre>{@code
 * OutboxRelay relay = OutboxRelay.builder(dataSource, KafkaOutboxPublisher.of(producer)).build().start();
 * // on shutdown: relay.close();
 * }</pre>
 *
 * <p><b>Order and ownership.</b> Each key's messages are published in insertion order, one at a time (the next only
 * after the broker acknowledged the previous one), many keys at once. A key belongs to one of {@link
 * Builder#shards(int)} shards ({@code hash(key) % shards}); a relay publishes only the shards it leases, so with
 * several relays (one per service instance) no two publish one key's messages at once while their leases hold. Each
 * live relay takes its fair share of the shards; a relay that stops hands its shards back, one that crashes loses them
 * when its lease ends. See docs/outbox.md for why shard leases rather than row locks.
 *
 * <p><b>At least once, with stable ids.</b> A message is marked sent after the broker acknowledged it; a relay that
 * crashes in between leaves it unsent and the next owner publishes it again with the same message id, which the next
 * service's guard recognises.
 *
 * <p><b>Failures.</b> A publish that fails is tried again after the retry policy's backoff; its key's later messages
 * wait behind it, other keys go on. A refusal ({@link dev.idem.outbox.spi.PublishRefusedException}) counts; at the
 * policy's {@code maxAttempts} refusals the message is parked with its reason ({@link OutboxListener#parked}, {@link
 * #stats()}, {@link #parked(int)}) until {@link #unpark(String)}. A broker that does not answer never parks anything.
 *
 * <p>Thread-safe. {@link #start()} runs it on a thread of its own (on PostgreSQL with a second one that listens for
 * committed messages on a connection of its own and wakes it); {@link #relayOnce()} runs one cycle on the caller's
 * thread (tests, schedulers). Does not own the data source nor the publisher.
 */
public final class OutboxRelay implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(OutboxRelay.class.getName());

    private final DataSource dataSource;
    private final OutboxPublisher publisher;
    private final String table;
    private final int shards;
    private final int batchSize;
    private final Duration pollInterval;
    private final Duration lease;
    private final Duration publishTimeout;
    private final RetryPolicy retryPolicy;
    private final Duration retention;
    private final Duration purgeInterval;
    private final int purgeBatchSize;
    private final Clock clock;
    private final LongSupplier nanoTime;
    private final OutboxListener listener;
    private final String relayId;
    private final @Nullable Dialect configuredDialect;

    private final Object lock = new Object();
    /** One cycle at a time: {@link #relayOnce()} from the relay's thread or a caller. */
    private final Object cycle = new Object();

    private volatile @Nullable Parts parts;
    private volatile boolean closed;
    private @Nullable RelayLoop loop;
    private @Nullable CommitNotifications notifications;

    /** What the first use sets up, once the dialect is known: one object per job, on one database path. */
    private record Parts(
            OutboxSql sql,
            ShardLeases leases,
            DueMessages due,
            SentMarks marks,
            BatchPublisher batches,
            Retries retries,
            Backlog backlog,
            Purge purge) {}

    private OutboxRelay(Builder b) {
        this.dataSource = b.dataSource;
        this.publisher = b.publisher;
        this.table = b.table;
        this.shards = b.shards;
        this.batchSize = b.batchSize;
        this.pollInterval = b.pollInterval;
        this.lease = b.lease;
        this.publishTimeout = b.publishTimeout;
        this.retryPolicy = b.retryPolicy;
        this.retention = b.retention;
        this.purgeInterval = b.purgeInterval;
        this.purgeBatchSize = b.purgeBatchSize;
        this.clock = b.clock;
        this.nanoTime = b.nanoTime;
        this.listener = new QuietListener(b.listener);
        this.relayId = b.relayId;
        this.configuredDialect = b.dialect;
    }

    public static Builder builder(DataSource dataSource, OutboxPublisher publisher) {
        return new Builder(dataSource, publisher);
    }

    /** Starts relaying on a thread of its own; returns this relay. */
    public OutboxRelay start() {
        synchronized (lock) {
            if (closed) {
                throw new IllegalStateException("this OutboxRelay is closed");
            }
            if (loop == null) {
                Parts p = prepare();
                RelayLoop l = new RelayLoop(
                        relayId,
                        () -> {
                            int published = relayOnce();
                            p.purge().whenDue();
                            return published;
                        },
                        batchSize,
                        pollInterval,
                        this::untilDue,
                        retryPolicy,
                        listener,
                        () -> closed);
                if (p.sql().dialect == Dialect.POSTGRESQL && CommitNotifications.available()) {
                    CommitNotifications n = CommitNotifications.start(dataSource, table, l::wake, retryPolicy, relayId);
                    l.handshake(new IdleHandshake(n, p.due()::sendersGone));
                    notifications = n;
                }
                loop = l;
                l.start();
            }
        }
        return this;
    }

    /** This relay's id in the shard table. */
    public String relayId() {
        return relayId;
    }

    /**
     * One cycle: renews and balances the shard leases when due, publishes at most one batch of the owned shards' due
     * messages and marks them sent. Returns how many were published.
     */
    public int relayOnce() {
        synchronized (cycle) {
            Parts p = prepare();
            if (p.leases().renewalDue()) {
                p.marks()
                        .flush(); // before a rebalance may hand a shard over: its new owner must not publish them again
            }
            ShardLeases.Owned owned = p.leases().current();
            p.retries().looking(clock.millis());
            if (owned.shards().isEmpty()) {
                return 0;
            }
            List<DueMessages.Row> batch = p.due().markAndFetch(p.marks(), owned.shards());
            int published = p.batches().publish(batch, owned.validUntilNanos(), () -> closed);
            if (batch.size() < batchSize) {
                p.marks().flush(); // no full batch follows at once to carry the mark
            }
            return published;
        }
    }

    /** How long until work this relay knows of comes due without a commit: its lease renewal, a backed-off retry. */
    private Duration untilDue() {
        synchronized (cycle) {
            Parts p = prepare();
            Duration renewal = p.leases().untilRenewal();
            return p.retries()
                    .untilNext(clock.millis())
                    .filter(retry -> retry.compareTo(renewal) < 0)
                    .orElse(renewal);
        }
    }

    /** Deletes messages sent longer than the retention ago, in batches; never an unsent one. Returns how many. */
    public int purgeOnce() {
        return prepare().purge().once();
    }

    /** The backlog: unsent (the lag), parked, and the age of the oldest unsent message. */
    public OutboxStats stats() {
        return prepare().backlog().stats();
    }

    /** Up to {@code limit} parked messages, oldest first, with the broker's reason. */
    public List<ParkedMessage> parked(int limit) {
        return prepare().backlog().parked(limit);
    }

    /** Puts a parked message back in line (published before its key's later messages). False if it is not parked. */
    public boolean unpark(String messageId) {
        return prepare().backlog().unpark(messageId);
    }

    /**
     * Stops the relay's thread (it finishes the batch in hand), then hands its shards back so that the other relays
     * take them at once. Returns within about twice the publish timeout plus 10 s: a thread still held by the
     * publisher after that keeps its shards until their leases end. Idempotent.
     */
    @Override
    public void close() {
        RelayLoop l;
        CommitNotifications n;
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
            l = loop;
            n = notifications;
        }
        if (n != null) {
            n.close();
        }
        if (l != null && !l.stop(publishTimeout.multipliedBy(2).plusSeconds(5))) {
            // Held in a publish that ignores interrupts (a RabbitMQ connection blocked by an alarm): waiting for its
            // batch would hang the caller (the Spring context's shutdown), handing its shards back would let another
            // relay publish its keys while it may still.
            LOG.log(
                    System.Logger.Level.WARNING,
                    "relay {0}: closed while its thread still waits on the publisher; its shards are taken over"
                            + " when their leases end",
                    relayId);
            return;
        }
        Parts p = parts;
        if (p != null) {
            try {
                synchronized (cycle) {
                    p.marks().flush();
                }
                p.leases().releaseAll();
            } catch (RuntimeException e) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        "relay {0}: could not hand its shards back ({1}); they are"
                                + " taken over when their leases end",
                        relayId,
                        e.getMessage());
            }
        }
    }

    private Parts prepare() {
        Parts p = parts;
        if (p != null) {
            return p;
        }
        synchronized (lock) {
            if (parts == null) {
                Dialect d = configuredDialect != null ? configuredDialect : detectDialect();
                OutboxSql sql = new OutboxSql(d, table);
                RelayDatabase db = new RelayDatabase(
                        OwnTransaction.builder(dataSource).dialect(d).build(), "outbox " + table);
                ShardLeases leases = new ShardLeases(db, sql, relayId, shards, lease, nanoTime);
                leases.prepare();
                SentMarks marks = new SentMarks(db, sql, clock, listener);
                Retries retries = new Retries();
                PublishFailures failures = new PublishFailures(db, sql, retryPolicy, clock, listener, retries);
                parts = new Parts(
                        sql,
                        leases,
                        new DueMessages(db, sql, shards, batchSize, clock),
                        marks,
                        new BatchPublisher(publisher, publishTimeout, nanoTime, marks, failures),
                        retries,
                        new Backlog(db, sql, clock),
                        new Purge(db, sql, retention, purgeInterval, purgeBatchSize, clock));
            }
            return Objects.requireNonNull(parts);
        }
    }

    private Dialect detectDialect() {
        try (Connection c = dataSource.getConnection()) {
            return Schema.detect(c);
        } catch (SQLException e) {
            throw new StoreUnavailableException(
                    "outbox " + table, "could not open a connection to detect the database: " + e.getMessage(), e);
        }
    }

    /** Builds an {@link OutboxRelay}. Each setter checks its value at once; {@link #build()} checks the pairs. */
    public static final class Builder {
        private final DataSource dataSource;
        private final OutboxPublisher publisher;
        private String table = OutboxSchema.DEFAULT_TABLE;
        private int shards = 16;
        private int batchSize = 100;
        private Duration pollInterval = Duration.ofMillis(100);
        private Duration lease = Duration.ofSeconds(30);
        private Duration publishTimeout = Duration.ofSeconds(10);
        private RetryPolicy retryPolicy = RetryPolicy.builder()
                .initialDelay(Duration.ofSeconds(1))
                .multiplier(2.0)
                .maxDelay(Duration.ofMinutes(5))
                .maxAttempts(10)
                .build();
        private Duration retention = Duration.ofDays(7);
        private Duration purgeInterval = Duration.ofMinutes(1);
        private int purgeBatchSize = 1000;
        private Clock clock = Clock.systemUTC();
        private LongSupplier nanoTime = System::nanoTime;
        private OutboxListener listener = OutboxListener.NONE;
        private String relayId = "relay-" + ProcessHandle.current().pid() + "-"
                + UUID.randomUUID().toString().substring(0, 8);
        private @Nullable Dialect dialect;

        private Builder(DataSource dataSource, OutboxPublisher publisher) {
            this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
            this.publisher = Objects.requireNonNull(publisher, "publisher");
        }

        /** The outbox table. Default {@code idem_outbox}. */
        public Builder table(String table) {
            this.table = OutboxSchema.validateTable(table);
            return this;
        }

        /**
         * How many shards the keys are spread over: the most relays that can publish at once. Default 16; 1 to 1024.
         * Every relay of one table must use the same number.
         */
        public Builder shards(int shards) {
            if (shards < 1 || shards > 1024) {
                throw new ConfigurationException("shards must be 1 to 1024, got " + shards);
            }
            this.shards = shards;
            return this;
        }

        /** The most messages one cycle fetches and publishes. Default 100; 1 to 10000. */
        public Builder batchSize(int batchSize) {
            if (batchSize < 1 || batchSize > 10_000) {
                throw new ConfigurationException("batchSize must be 1 to 10000, got " + batchSize);
            }
            this.batchSize = batchSize;
            return this;
        }

        /**
         * How long an idle relay waits before it looks again. Default 100 ms; 1 ms to 1 min. On PostgreSQL a started
         * relay also listens for {@code Outbox.send}'s commit notifications on a connection of its own, which wake it
         * at once; the poll is then the fallback. There a relay that is finding messages looks again after 2 ms (or the
         * poll interval if shorter) without being woken, so that senders need not notify it (docs/outbox.md, Waking on
         * commit).
         */
        public Builder pollInterval(Duration pollInterval) {
            this.pollInterval = between("pollInterval", pollInterval, Duration.ofMillis(1), Duration.ofMinutes(1));
            return this;
        }

        /**
         * How long a relay's shard leases hold without renewal (renewed every quarter of it): a crashed relay's shards
         * wait this long for a new owner. Default 30 s; 1 s to 10 min; more than twice the publish timeout.
         */
        public Builder lease(Duration lease) {
            this.lease = between("lease", lease, Duration.ofSeconds(1), Duration.ofMinutes(10));
            return this;
        }

        /** How long a wave of publishes may wait for the broker's acknowledgements. Default 10 s; 10 ms to 5 min. */
        public Builder publishTimeout(Duration publishTimeout) {
            this.publishTimeout =
                    between("publishTimeout", publishTimeout, Duration.ofMillis(10), Duration.ofMinutes(5));
            return this;
        }

        /**
         * The backoff after a failed publish (also after a failed cycle, and before listening again for commits on
         * PostgreSQL), and ({@code maxAttempts}) how many refusals park a message. Default 1 s doubling to 5 min, 10
         * refusals.
         */
        public Builder retryPolicy(RetryPolicy retryPolicy) {
            this.retryPolicy = Objects.requireNonNull(retryPolicy, "retryPolicy");
            return this;
        }

        /** How long a sent message is kept before the purge deletes it. Default 7 days; at least 1 s. */
        public Builder retention(Duration retention) {
            this.retention = between("retention", retention, Duration.ofSeconds(1), Duration.ofDays(3650));
            return this;
        }

        /** How often the relay's thread purges. Default 1 min. */
        public Builder purgeInterval(Duration purgeInterval) {
            this.purgeInterval = between("purgeInterval", purgeInterval, Duration.ofSeconds(1), Duration.ofDays(1));
            return this;
        }

        /** Rows per purge statement (each its own short transaction). Default 1000; 1 to 100000. */
        public Builder purgeBatchSize(int purgeBatchSize) {
            if (purgeBatchSize < 1 || purgeBatchSize > 100_000) {
                throw new ConfigurationException("purgeBatchSize must be 1 to 100000, got " + purgeBatchSize);
            }
            this.purgeBatchSize = purgeBatchSize;
            return this;
        }

        /**
         * Backoff ({@code retry_at}), sent, parked and purge times, and the age in {@link #stats()}. Shard leases do not
         * follow it: their ends are stamped and compared on the database's clock, and the relay's own hold on them runs
         * on {@link #nanoTime(LongSupplier)}. Default: the system UTC clock.
         */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /**
         * The monotonic clock (nanoseconds, like {@link System#nanoTime()}) that times the lease renewals and how long
         * this relay may still publish the shards it leased, so that a wall clock that steps never stretches them.
         * Default {@code System::nanoTime}.
         */
        public Builder nanoTime(LongSupplier nanoTime) {
            this.nanoTime = Objects.requireNonNull(nanoTime, "nanoTime");
            return this;
        }

        public Builder listener(OutboxListener listener) {
            this.listener = Objects.requireNonNull(listener, "listener");
            return this;
        }

        /** This relay's id in the shard table; unique per live relay. Default: {@code relay-<pid>-<random>}. */
        public Builder relayId(String relayId) {
            Objects.requireNonNull(relayId, "relayId");
            if (relayId.isBlank() || relayId.length() > 64) {
                throw new ConfigurationException("relayId must be 1 to 64 characters, got '" + relayId + "'");
            }
            this.relayId = relayId;
            return this;
        }

        /** The SQL dialect. Default: detected from the first connection. */
        public Builder dialect(Dialect dialect) {
            this.dialect = Objects.requireNonNull(dialect, "dialect");
            return this;
        }

        public OutboxRelay build() {
            if (lease.compareTo(publishTimeout.multipliedBy(2)) <= 0) {
                throw new ConfigurationException("lease (" + lease + ") must be more than twice the publishTimeout ("
                        + publishTimeout + "): a relay stops publishing before its leases could run out mid-wave");
            }
            return new OutboxRelay(this);
        }

        private static Duration between(String name, Duration value, Duration min, Duration max) {
            Objects.requireNonNull(value, name);
            if (value.compareTo(min) < 0 || value.compareTo(max) > 0) {
                throw new ConfigurationException(name + " must be " + min + " to " + max + ", got " + value);
            }
            return value;
        }
    }
}
