package dev.idem;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Something a guard, a store or a broker adapter wants its listener to know. Never carries the payload; the key only
 * as {@link IdempotencyKey#logId()} (a hash).
 *
 * <pre>{@code
 * IdempotencyEvent.builder(IdempotencyEvent.Type.HANDLED, "payments")
 *         .guardKind(IdempotencyEvent.GuardKind.LEASE).outcome(outcome).keyLogId(key.logId()).build();
 * }</pre>
 *
 * <p>Immutable and thread-safe.
 */
public final class IdempotencyEvent {

    /** What happened. The last seven are warnings ({@link #isWarning()}). */
    public enum Type {
        /** A guard finished a handling; {@link #outcome()} says how. */
        HANDLED(false),
        /** A broker adapter scheduled a retry; {@link #attempt()} is the attempt that failed. */
        RETRY_SCHEDULED(false),
        /** A broker adapter sent a message to its dead-letter destination. */
        DEAD_LETTERED(false),
        /** A broker adapter acknowledged or committed; {@link #attempt()} and the message may carry counts. */
        COMMITTED(false),
        /** The store was unavailable and a handler ran unguarded because fail-open was chosen. */
        FAIL_OPEN(true),
        /** A lease ended or could not be extended while its handler ran; another consumer may apply the effect. */
        LEASE_LOST(true),
        /** The effect was applied but its completion could not be recorded. */
        COMPLETION_NOT_RECORDED(true),
        /** A failed handling's claim could not be released; redeliveries wait for the lease to end. */
        RELEASE_FAILED(true),
        /** A store detected that it lost marks (e.g. Redis restarted without persistence). */
        MARKS_LOST(true),
        /** The store could not be reached. */
        STORE_UNAVAILABLE(true),
        /** A handler ran longer than it was allowed to. */
        HANDLER_TIMEOUT(true);

        private final boolean warning;

        Type(boolean warning) {
            this.warning = warning;
        }

        /** True for what an operator should look at. */
        public boolean isWarning() {
            return warning;
        }
    }

    /** Which kind of guard the event comes from. */
    public enum GuardKind {
        /** {@link Guard} on a lease store. */
        LEASE,
        /** The transactional inbox. */
        INBOX,
        STATE_MACHINE,
        VERSION,
        PRECONDITION,
        UNIQUE_ROW,
        /** Not from a guard (a store alert, a broker adapter). */
        NONE
    }

    private final Type type;
    private final String namespace;
    private final GuardKind guardKind;
    private final String source;
    private final @Nullable Outcome outcome;
    private final int attempt;
    private final String keyLogId;
    private final Duration elapsed;
    private final Instant time;
    private final String message;

    private IdempotencyEvent(Builder b, Instant time) {
        this.type = b.type;
        this.namespace = b.namespace;
        this.guardKind = b.guardKind;
        this.source = b.source;
        this.outcome = b.outcome;
        this.attempt = b.attempt;
        this.keyLogId = b.keyLogId;
        this.elapsed = b.elapsed;
        this.time = time;
        this.message = b.message;
    }

    /** Starts an event of {@code type} in {@code namespace} (a guard's namespace, or a store's key prefix). */
    public static Builder builder(Type type, String namespace) {
        return new Builder(type, namespace);
    }

    public Type type() {
        return type;
    }

    public String namespace() {
        return namespace;
    }

    public GuardKind guardKind() {
        return guardKind;
    }

    /** Who raised it: a store's {@code describe()}, or an adapter's name such as {@code "kafka"}; empty if unset. */
    public String source() {
        return source;
    }

    /** The outcome of the handling, for {@link Type#HANDLED} (and adapter events about one delivery). */
    public @Nullable Outcome outcome() {
        return outcome;
    }

    /** The delivery attempt (1-based) where an adapter counts them, else 0. */
    public int attempt() {
        return attempt;
    }

    /** {@link IdempotencyKey#logId()} of the key concerned, {@code "<invalid>"} for a rejected key, {@code "*"} for all. */
    public String keyLogId() {
        return keyLogId;
    }

    /** Time spent (in the guard, handler included, for {@link Type#HANDLED}); zero if not measured. */
    public Duration elapsed() {
        return elapsed;
    }

    public Instant time() {
        return time;
    }

    /** Readable detail, never the payload; empty if none. */
    public String message() {
        return message;
    }

    /** Shorthand for {@code type().isWarning()}. */
    public boolean isWarning() {
        return type.isWarning();
    }

    @Override
    public String toString() {
        return type + " " + namespace + " " + keyLogId + (outcome == null ? "" : " " + outcome.type())
                + (message.isEmpty() ? "" : ": " + message);
    }

    /** Builds an {@link IdempotencyEvent}. */
    public static final class Builder {
        private final Type type;
        private final String namespace;
        private GuardKind guardKind = GuardKind.NONE;
        private String source = "";
        private @Nullable Outcome outcome;
        private int attempt;
        private String keyLogId = "*";
        private Duration elapsed = Duration.ZERO;
        private @Nullable Instant time;
        private String message = "";

        private Builder(Type type, String namespace) {
            this.type = Objects.requireNonNull(type, "type");
            this.namespace = Objects.requireNonNull(namespace, "namespace");
        }

        /** Default {@link GuardKind#NONE}. */
        public Builder guardKind(GuardKind guardKind) {
            this.guardKind = Objects.requireNonNull(guardKind, "guardKind");
            return this;
        }

        public Builder source(String source) {
            this.source = Objects.requireNonNull(source, "source");
            return this;
        }

        public Builder outcome(@Nullable Outcome outcome) {
            this.outcome = outcome;
            return this;
        }

        public Builder attempt(int attempt) {
            if (attempt < 0) {
                throw new IllegalArgumentException("attempt must not be negative, got " + attempt);
            }
            this.attempt = attempt;
            return this;
        }

        /** Default {@code "*"} (no one key). */
        public Builder keyLogId(String keyLogId) {
            this.keyLogId = Objects.requireNonNull(keyLogId, "keyLogId");
            return this;
        }

        public Builder elapsed(Duration elapsed) {
            this.elapsed = Objects.requireNonNull(elapsed, "elapsed");
            return this;
        }

        /** Default: the system UTC clock's now, at {@link #build()}. */
        public Builder time(Instant time) {
            this.time = Objects.requireNonNull(time, "time");
            return this;
        }

        public Builder message(String message) {
            this.message = Objects.requireNonNull(message, "message");
            return this;
        }

        public IdempotencyEvent build() {
            return new IdempotencyEvent(this, time == null ? Instant.now() : time);
        }
    }
}
