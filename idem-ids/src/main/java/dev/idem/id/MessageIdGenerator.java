package dev.idem.id;

import dev.idem.ConfigurationException;
import dev.idem.IdempotencyKey;
import dev.idem.id.IdGenerationException.Reason;
import dev.idem.id.spi.NodeIdLeaseStore;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * Issues message ids for producers to fix before the first send, as a 64-bit long ({@link #nextLong()}) or a
 * readable string ({@link #nextString()}, e.g. {@code ORDER_20240115143000123_NODE01_0001}); see {@link
 * MessageIdFormat} for both layouts and for parsing.
 *
 * <pre>{@code
 * MessageIdGenerator ids = MessageIdGenerator.builder().prefix("ORDER").nodeIdLease(leaseStore, "orders").build();
 * String id = ids.nextString();   // ORDER_20240115143000123_NODE01_0001
 * }</pre>
 *
 * <p><b>Guarantees.</b> The ids of one generator strictly increase (long and string share one sequence). Two
 * generators never issue the same id while their node ids differ: give each a fixed node id of its own, or lease
 * one ({@link Builder#nodeIdLease}), which makes two live generators of an id space hold different node ids. When
 * a millisecond's sequence is used up, the generator waits for the next millisecond; it never wraps. When the clock
 * steps back, it waits until the clock passes the last id issued if the step is at most {@link
 * Builder#maxClockStepBack} (default 1 s), and otherwise throws {@link IdGenerationException} until the clock
 * catches up; it never repeats an id. A leased node id starts above the highest timestamp any earlier holder of it
 * may have issued, so a node that restarts with its clock behind cannot repeat an id either; when the lease cannot
 * be renewed in time, the generator stops issuing (fails closed) rather than risk another node taking the same node
 * id.
 *
 * <p>Thread-safe and lock-free: the last (timestamp, sequence) lives in one {@link AtomicLong} advanced by
 * compare-and-set. {@link #close()} releases a leased node id; a closed generator issues nothing.
 */
public final class MessageIdGenerator implements AutoCloseable {
    private static final long SEALED = -1L;
    private static final long NANOS_PER_MILLI = 1_000_000L;
    private static final Duration STALL_MARGIN = Duration.ofSeconds(1);

    private final MessageIdFormat format;
    private final Clock clock;
    private final int nodeId;
    private final @Nullable String prefix;
    private final @Nullable NodeIdLease lease;
    private final long epochMillis;
    private final long maxOffset;
    private final int nodeBits;
    private final int sequenceBits;
    private final long sequenceMask;
    private final long nodeField;
    private final long maxStepBackMillis;
    private final long stallNanos;
    private final byte[] nodePart;
    private final AtomicLong state;
    private volatile TimestampText lastTimestamp = new TimestampText(Long.MIN_VALUE, new byte[0]);

    private record TimestampText(long millis, byte[] digits) {}

    private MessageIdGenerator(Builder b, int nodeId, @Nullable NodeIdLease lease, Instant highWaterMark) {
        this.format = b.format;
        this.clock = b.clock;
        this.nodeId = nodeId;
        this.prefix = b.prefix;
        this.lease = lease;
        this.epochMillis = format.epochMillis();
        this.maxOffset = format.maxOffset();
        this.nodeBits = format.nodeBits();
        this.sequenceBits = format.sequenceBits();
        this.sequenceMask = format.maxSequence();
        this.nodeField = (long) nodeId << sequenceBits;
        this.maxStepBackMillis = b.maxClockStepBack.toMillis();
        this.stallNanos = b.maxClockStepBack.plus(STALL_MARGIN).toNanos();
        this.nodePart = format.nodePart(nodeId);
        long markOffset = highWaterMark.toEpochMilli() - epochMillis;
        if (markOffset > maxOffset) {
            throw new ConfigurationException("node id " + nodeId + " has a high-water mark of " + highWaterMark
                    + ", past the last timestamp of " + format + ": use a later epoch or more timestampBits");
        }
        // The last id issued as (timestamp offset + 1, sequence): 0 is "none yet", the high-water mark is used up.
        this.state = new AtomicLong(markOffset < 0 ? 0 : (markOffset + 1) << sequenceBits | sequenceMask);
    }

    /** A generator with a fixed node id, the default format and the system UTC clock; no default prefix. */
    public static MessageIdGenerator withNodeId(int nodeId) {
        return builder().nodeId(nodeId).build();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The next id as a 64-bit long. */
    public long nextLong() {
        long packed = next();
        return (packed & ~sequenceMask) << nodeBits | nodeField | (packed & sequenceMask);
    }

    /** The next id as a string with the builder's prefix. */
    public String nextString() {
        if (prefix == null) {
            throw new ConfigurationException(
                    "this generator has no prefix: set one with .prefix(\"ORDER\") on the builder, or call nextString(prefix)");
        }
        return text(prefix, next());
    }

    /** The next id as a string with {@code prefix} (see {@link MessageIdFormat#validatePrefix}). */
    public String nextString(String prefix) {
        MessageIdFormat.validatePrefix(prefix);
        return text(prefix, next());
    }

    public MessageIdFormat format() {
        return format;
    }

    /** The node id of every id this generator issues (fixed, or leased at build). */
    public int nodeId() {
        return nodeId;
    }

    /** Issues nothing more and releases a leased node id, recording the highest timestamp issued. Idempotent. */
    @Override
    public void close() {
        long last = state.getAndSet(SEALED);
        if (last != SEALED && lease != null) {
            lease.release(Instant.ofEpochMilli((last >>> sequenceBits) - 1 + epochMillis));
        }
    }

    @Override
    public String toString() {
        return "MessageIdGenerator[node " + nodeId + (lease == null ? " (fixed)" : " (leased)") + ", " + format + "]";
    }

    /** Test hook: one renewal of the node id's lease now; false when it failed or there is no lease. */
    boolean renewLease() {
        return lease != null && lease.renew();
    }

    private String text(String prefix, long packed) {
        long millis = (packed >>> sequenceBits) + epochMillis;
        TimestampText timestamp = lastTimestamp;
        if (timestamp.millis() != millis) {
            timestamp = new TimestampText(millis, format.timestampDigits(millis));
            lastTimestamp = timestamp;
        }
        byte[] bytes = format.write(prefix, timestamp.digits(), nodePart, (int) (packed & sequenceMask));
        return new String(bytes, StandardCharsets.ISO_8859_1);
    }

    /** The (timestamp offset, sequence) of a new id, above every one issued before, packed as in a long id. */
    private long next() {
        long waitStart = 0;
        int spins = 0;
        while (true) {
            long last = state.get();
            if (last == SEALED) {
                throw new IdGenerationException(Reason.CLOSED, "the message id generator is closed", null);
            }
            long now = clock.millis() - epochMillis;
            long lastOffset = (last >>> sequenceBits) - 1;
            long next;
            if (now > lastOffset) {
                if (now > maxOffset) {
                    throw new ConfigurationException("the clock reads " + Instant.ofEpochMilli(now + epochMillis)
                            + ", past the last timestamp of " + format + ": use a later epoch or more timestampBits");
                }
                next = (now + 1) << sequenceBits;
            } else if (now == lastOffset && (last & sequenceMask) != sequenceMask && now >= 0) {
                next = last + 1;
            } else {
                checkBehind(now, lastOffset);
                if (waitStart == 0) {
                    waitStart = System.nanoTime();
                } else if (System.nanoTime() - waitStart > stallNanos) {
                    throw new IdGenerationException(
                            Reason.CLOCK_NOT_ADVANCING,
                            "waited " + Duration.ofNanos(System.nanoTime() - waitStart) + " for the clock to pass "
                                    + Instant.ofEpochMilli(lastOffset + epochMillis) + ", but it reads "
                                    + Instant.ofEpochMilli(now + epochMillis) + ": is the clock stopped?",
                            null);
                }
                pause(lastOffset - now, spins++);
                continue;
            }
            if (lease != null && (next >>> sequenceBits) - 1 + epochMillis > lease.validUntil()) {
                throw lease.refusal(now + epochMillis);
            }
            if (state.compareAndSet(last, next)) {
                return next - (1L << sequenceBits);
            }
        }
    }

    private void checkBehind(long now, long lastOffset) {
        if (now < 0) {
            throw new ConfigurationException("the clock reads " + Instant.ofEpochMilli(now + epochMillis)
                    + ", before the id epoch " + format.epoch() + ": set an epoch in the past");
        }
        if (lastOffset - now > maxStepBackMillis) {
            throw new IdGenerationException(
                    Reason.CLOCK_MOVED_BACKWARDS,
                    "the clock reads " + Instant.ofEpochMilli(now + epochMillis) + ", "
                            + Duration.ofMillis(lastOffset - now) + " behind the last id issued by node " + nodeId
                            + " (or the node id's high-water mark) at " + Instant.ofEpochMilli(lastOffset + epochMillis)
                            + ", more than maxClockStepBack " + Duration.ofMillis(maxStepBackMillis)
                            + ": no ids until the clock catches up, so that none repeats; check the clock's time"
                            + " source",
                    null);
        }
    }

    /** Waits a little for the clock: spins within a millisecond, parks when the clock is further behind. */
    private static void pause(long behindMillis, int spins) {
        if (behindMillis > 1) {
            LockSupport.parkNanos(Math.min(behindMillis - 1, 10) * NANOS_PER_MILLI);
        } else if (spins < 64) {
            Thread.onSpinWait();
        } else {
            Thread.yield();
        }
    }

    /** Builds a {@link MessageIdGenerator}. Each setter validates its value at once, the combination in build(). */
    public static final class Builder {
        private MessageIdFormat format = MessageIdFormat.defaults();
        private Clock clock = Clock.systemUTC();
        private @Nullable String prefix;
        private int nodeId = -1;
        private @Nullable NodeIdLeaseStore leaseStore;
        private @Nullable String space;
        private @Nullable Duration lease;
        private Duration maxClockStepBack = Duration.ofSeconds(1);

        private Builder() {}

        /** The layout of the ids. Default {@link MessageIdFormat#defaults()}. */
        public Builder format(MessageIdFormat format) {
            this.format = Objects.requireNonNull(format, "format");
            return this;
        }

        /** The prefix of {@link #nextString()}, e.g. {@code ORDER}; see {@link MessageIdFormat}. No default. */
        public Builder prefix(String prefix) {
            this.prefix = MessageIdFormat.validatePrefix(prefix);
            return this;
        }

        /** A fixed node id, unique among every generator whose ids may meet. Either this or a node id lease. */
        public Builder nodeId(int nodeId) {
            if (nodeId < 0) {
                throw new ConfigurationException("node id must not be negative, got " + nodeId);
            }
            this.nodeId = nodeId;
            return this;
        }

        /**
         * Leases the node id from {@code store} at build, among the generators of {@code space} (1 to 64 characters of
         * {@code [A-Za-z0-9._-]}; every generator whose ids may meet uses the same space). Either this or a fixed
         * node id.
         */
        public Builder nodeIdLease(NodeIdLeaseStore store, String space) {
            this.leaseStore = Objects.requireNonNull(store, "store");
            try {
                this.space = IdempotencyKey.validateNamespace(space);
            } catch (ConfigurationException e) {
                throw new ConfigurationException("id space '" + space + "' is not valid: use 1 to 64 characters of"
                        + " [A-Za-z0-9._-] starting with a letter or digit, e.g. 'order-service'");
            }
            return this;
        }

        /**
         * How long a node id lease lasts; renewed every third of it. The generator issues up to 90% of a lease past
         * its last renewal, then stops. At least 1 s. Default 30 s.
         */
        public Builder lease(Duration lease) {
            if (lease == null || lease.compareTo(Duration.ofSeconds(1)) < 0) {
                throw new ConfigurationException("node id lease must be at least 1 s, got " + lease);
            }
            this.lease = lease;
            return this;
        }

        /** How far the clock may step back and be waited out; beyond it, ids are refused. Default 1 s. */
        public Builder maxClockStepBack(Duration maxClockStepBack) {
            if (maxClockStepBack == null || maxClockStepBack.isNegative()) {
                throw new ConfigurationException("maxClockStepBack must be zero or positive, got " + maxClockStepBack);
            }
            this.maxClockStepBack = maxClockStepBack;
            return this;
        }

        /** Where timestamps come from. Default: the system UTC clock. */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /** Builds the generator; with a lease store, acquires the node id and starts renewing it. */
        public MessageIdGenerator build() {
            if ((nodeId >= 0) == (leaseStore != null)) {
                throw new ConfigurationException("a MessageIdGenerator needs exactly one of .nodeId(n) and"
                        + " .nodeIdLease(store, space)" + (nodeId >= 0 ? ", not both" : ""));
            }
            if (leaseStore == null) {
                if (lease != null) {
                    throw new ConfigurationException(".lease(...) applies to leased node ids only:"
                            + " drop it or use .nodeIdLease(store, space)");
                }
                if (nodeId > format.maxNodeId()) {
                    throw new ConfigurationException("node id " + nodeId + " does not fit in " + format.nodeBits()
                            + " node bits (0 to " + format.maxNodeId() + "): use a smaller node id or more nodeBits");
                }
                return new MessageIdGenerator(this, nodeId, null, Instant.EPOCH);
            }
            NodeIdLease acquired = NodeIdLease.acquire(
                    leaseStore,
                    Objects.requireNonNull(space),
                    format.maxNodeId(),
                    lease == null ? Duration.ofSeconds(30) : lease,
                    clock);
            MessageIdGenerator generator;
            try {
                generator = new MessageIdGenerator(this, acquired.nodeId(), acquired, acquired.grantedHighWaterMark());
            } catch (RuntimeException e) {
                acquired.release(acquired.grantedHighWaterMark());
                throw e;
            }
            acquired.startRenewing();
            return generator;
        }
    }
}
