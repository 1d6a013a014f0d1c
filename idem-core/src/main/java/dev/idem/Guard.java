package dev.idem;

import dev.idem.IdempotencyListener.Warning;
import dev.idem.internal.LeaseWatchdog;
import dev.idem.internal.SafeListener;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.IdempotencyStore;
import dev.idem.spi.UpdateResult;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import org.jspecify.annotations.Nullable;

/**
 * Wraps a handler so that its effect runs once per key: claim the key in a lease store, run the handler,
 * complete the claim, or release it when the handler fails so that the redelivery can run.
 *
 * <pre>{@code
 * Guard guard = Guard.builder(store).namespace("payments").build();
 * Outcome outcome = guard.run(message.key(), () -> chargeCustomer(message));
 * switch (outcome.action()) { case ACK -> ack(); case RETRY -> retryLater(); case DEAD_LETTER -> deadLetter(); }
 * }</pre>
 *
 * <p>Never throws for a message-level problem: every handling ends in an {@link Outcome}. Immutable and
 * thread-safe; one guard serves all consumer threads of a namespace. {@link #close()} stops its lease watchdog.
 */
public final class Guard implements AutoCloseable {

    /** What the guard does when the store cannot be reached. */
    public enum StoreFailurePolicy {
        /** Do not run the handler; answer {@link Outcome.Type#IN_PROGRESS} so the message is retried later. */
        FAIL_CLOSED,
        /** Run the handler unguarded and warn on every such pass. Duplicates may apply twice meanwhile. */
        FAIL_OPEN
    }

    private static final System.Logger LOG = System.getLogger(Guard.class.getName());
    private static final Duration MIN_POLL = Duration.ofMillis(1);
    private static final Duration MAX_POLL = Duration.ofMillis(200);

    private final IdempotencyStore store;
    private final String namespace;
    private final Duration lease;
    private final Duration retention;
    private final Clock clock;
    private final SafeListener listener;
    private final boolean reportOutcomes;
    private final StoreFailurePolicy storeFailurePolicy;
    private final Duration waitForInProgress;
    private final RetryPolicy retryPolicy;
    private final @Nullable LeaseWatchdog watchdog;

    private Guard(Builder b) {
        this.store = b.store;
        this.namespace = b.namespace;
        this.lease = b.lease;
        this.retention = b.retention;
        this.clock = b.clock;
        this.listener = new SafeListener(b.listener);
        this.reportOutcomes = b.listener != IdempotencyListener.NONE;
        this.storeFailurePolicy = b.storeFailurePolicy;
        this.waitForInProgress = b.waitForInProgress;
        this.retryPolicy = b.retryPolicy;
        this.watchdog = b.watchdog ? new LeaseWatchdog(store, listener, lease) : null;
    }

    /** A guard with every default: 30 s lease, 7 day retention, fail closed, retry in-progress duplicates later. */
    public static Guard of(IdempotencyStore store, String namespace) {
        return builder(store).namespace(namespace).build();
    }

    public static Builder builder(IdempotencyStore store) {
        return new Builder(store);
    }

    /** Runs {@code task} once per key. */
    public Outcome run(String key, Task task) {
        return handle(key, null, ctx -> {
            task.run();
            return Outcome.processed();
        });
    }

    /** Runs {@code handler} once per key; {@code fingerprint} (see {@link Fingerprint}) detects key reuse. */
    public Outcome handle(String key, @Nullable String fingerprint, Handler handler) {
        long start = System.nanoTime();
        IdempotencyKey ik;
        try {
            ik = IdempotencyKey.of(namespace, key);
        } catch (InvalidKeyException e) {
            Outcome rejected = Outcome.rejected(e.getMessage(), e);
            listener.onOutcome(namespace, "<invalid>", rejected, Duration.ofNanos(System.nanoTime() - start));
            return rejected;
        }
        Outcome outcome = handle(ik, fingerprint, handler);
        if (reportOutcomes) {
            listener.onOutcome(namespace, ik.logId(), outcome, Duration.ofNanos(System.nanoTime() - start));
        }
        return outcome;
    }

    private Outcome handle(IdempotencyKey key, @Nullable String fingerprint, Handler handler) {
        ClaimRequest request = new ClaimRequest(key, newOwner(), fingerprint, lease);
        long waitUntil = System.nanoTime() + waitForInProgress.toNanos();
        Duration poll = MIN_POLL;
        while (true) {
            ClaimResult claim;
            try {
                claim = store.claim(request);
            } catch (StoreUnavailableException e) {
                return storeUnavailable(key, handler, e);
            }
            if (claim instanceof ClaimResult.Acquired acquired) {
                return runClaimed(key, acquired, handler);
            }
            if (claim instanceof ClaimResult.Done done) {
                if (mismatch(fingerprint, done.fingerprint())) {
                    return keyReused(key);
                }
                return Outcome.duplicate("already processed at " + done.completedAt(), done.result());
            }
            ClaimResult.InProgress busy = (ClaimResult.InProgress) claim;
            if (mismatch(fingerprint, busy.fingerprint())) {
                return keyReused(key);
            }
            if (System.nanoTime() + poll.toNanos() > waitUntil) {
                return Outcome.inProgress(
                        "in progress by another consumer until " + busy.leaseUntil(), retryDelay(busy.leaseUntil()));
            }
            if (!sleep(poll)) {
                return Outcome.inProgress(
                        "interrupted while waiting for the other consumer", retryPolicy.initialDelay());
            }
            poll = poll.multipliedBy(2).compareTo(MAX_POLL) > 0 ? MAX_POLL : poll.multipliedBy(2);
        }
    }

    private Outcome runClaimed(IdempotencyKey key, ClaimResult.Acquired claim, Handler handler) {
        boolean tookOver = claim instanceof ClaimResult.TakenOver;
        var context = new HandlingContext(key, claim.owner(), claim.fencingToken(), tookOver);
        Outcome outcome;
        try (LeaseWatchdog.Watch ignored = watchdog == null ? null : watchdog.watch(key, claim.owner())) {
            outcome = Objects.requireNonNull(handler.handle(context), "a handler must return an Outcome, not null");
        } catch (Exception e) {
            outcome = Outcome.ofException(e);
        } catch (Error e) {
            release(key, claim.owner());
            throw e;
        }
        if (outcome.isFinal()) {
            return complete(key, claim.owner(), outcome);
        }
        release(key, claim.owner());
        return outcome;
    }

    private Outcome complete(IdempotencyKey key, String owner, Outcome outcome) {
        try {
            UpdateResult done = store.complete(key, owner, outcome.result().orElse(null), retention);
            if (done == UpdateResult.APPLIED) {
                return outcome;
            }
            String message = "lease ended before completion (" + done
                    + "): another consumer may also have applied the effect; use a longer lease or keep the watchdog on";
            warn(Warning.Kind.LEASE_LOST, key, message);
            return outcome.withReason(outcome.reason() + "; " + message);
        } catch (StoreUnavailableException e) {
            String message = "effect applied but its completion was not recorded (" + e.getMessage()
                    + "); a redelivery after the lease ends would apply it again";
            warn(Warning.Kind.COMPLETION_NOT_RECORDED, key, message);
            return outcome.withReason(outcome.reason() + "; " + message);
        }
    }

    private void release(IdempotencyKey key, String owner) {
        try {
            store.release(key, owner);
        } catch (StoreUnavailableException e) {
            warn(
                    Warning.Kind.RELEASE_FAILED,
                    key,
                    "claim not released (" + e.getMessage() + "); redeliveries wait until the lease ends");
        }
    }

    private Outcome storeUnavailable(IdempotencyKey key, Handler handler, StoreUnavailableException e) {
        if (storeFailurePolicy == StoreFailurePolicy.FAIL_CLOSED) {
            return Outcome.inProgress(e.getMessage(), retryPolicy.initialDelay());
        }
        warn(Warning.Kind.FAIL_OPEN, key, "running the handler WITHOUT a guard: " + e.getMessage());
        try {
            Outcome outcome = handler.handle(new HandlingContext(key, "unguarded", 0, false));
            return outcome.withReason(outcome.reason() + " (unguarded: store unavailable, fail-open)");
        } catch (Exception ex) {
            return Outcome.ofException(ex);
        }
    }

    private Outcome keyReused(IdempotencyKey key) {
        return Outcome.rejected("key " + key.logId()
                + " was used before with a different payload: a producer reuses keys; give each message its own key");
    }

    private static boolean mismatch(@Nullable String requested, @Nullable String stored) {
        return requested != null && stored != null && !requested.equals(stored);
    }

    private Duration retryDelay(Instant leaseUntil) {
        Duration untilFree = Duration.between(clock.instant(), leaseUntil);
        if (untilFree.compareTo(retryPolicy.initialDelay()) < 0) {
            return retryPolicy.initialDelay();
        }
        return untilFree.compareTo(retryPolicy.maxDelay()) > 0 ? retryPolicy.maxDelay() : untilFree;
    }

    private void warn(Warning.Kind kind, IdempotencyKey key, String message) {
        LOG.log(System.Logger.Level.WARNING, "{0} {1}: {2}", kind, key.logId(), message);
        listener.onWarning(new Warning(kind, namespace, key.logId(), message));
    }

    private static boolean sleep(Duration d) {
        try {
            Thread.sleep(d.toMillis());
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private static String newOwner() {
        ThreadLocalRandom r = ThreadLocalRandom.current();
        return HexFormat.of().toHexDigits(r.nextLong()) + HexFormat.of().toHexDigits(r.nextLong());
    }

    public String namespace() {
        return namespace;
    }

    public RetryPolicy retryPolicy() {
        return retryPolicy;
    }

    public IdempotencyStore store() {
        return store;
    }

    /** Stops the lease watchdog. Does not close the store. */
    @Override
    public void close() {
        if (watchdog != null) {
            watchdog.close();
        }
    }

    /** Builds a {@link Guard}. Each setter validates its value at once. */
    public static final class Builder {
        private final IdempotencyStore store;
        private @Nullable String namespace;
        private Duration lease = Duration.ofSeconds(30);
        private Duration retention = Duration.ofDays(7);
        private Clock clock = Clock.systemUTC();
        private IdempotencyListener listener = IdempotencyListener.NONE;
        private StoreFailurePolicy storeFailurePolicy = StoreFailurePolicy.FAIL_CLOSED;
        private Duration waitForInProgress = Duration.ZERO;
        private RetryPolicy retryPolicy = RetryPolicy.defaults();
        private boolean watchdog = true;

        private Builder(IdempotencyStore store) {
            this.store = Objects.requireNonNull(store, "store");
        }

        /** Required: the handler's name, e.g. the consumer group. See {@link IdempotencyKey}. */
        public Builder namespace(String namespace) {
            this.namespace = IdempotencyKey.validateNamespace(namespace);
            return this;
        }

        /** How long a claim holds before another consumer may take it over. Default 30 s. */
        public Builder lease(Duration lease) {
            this.lease = positive("lease", lease);
            return this;
        }

        /** How long a completion is remembered; duplicates later than this run again. Default 7 days. */
        public Builder retention(Duration retention) {
            this.retention = positive("retention", retention);
            return this;
        }

        /** The clock used for retry delays. Stores have their own. Default: system UTC. */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        public Builder listener(IdempotencyListener listener) {
            this.listener = Objects.requireNonNull(listener, "listener");
            return this;
        }

        /** What to do when the store is unreachable. Default {@link StoreFailurePolicy#FAIL_CLOSED}. */
        public Builder onStoreUnavailable(StoreFailurePolicy policy) {
            this.storeFailurePolicy = Objects.requireNonNull(policy, "policy");
            return this;
        }

        /**
         * A duplicate that finds its key in progress waits up to {@code bound} for the first handling to finish and
         * answers with its outcome. Default zero: answer {@link Outcome.Type#IN_PROGRESS} at once.
         */
        public Builder waitForInProgress(Duration bound) {
            if (bound == null || bound.isNegative()) {
                throw new ConfigurationException("waitForInProgress must be zero or positive, got " + bound);
            }
            this.waitForInProgress = bound;
            return this;
        }

        /** The backoff that broker adapters apply to retried messages. Default {@link RetryPolicy#defaults()}. */
        public Builder retryPolicy(RetryPolicy retryPolicy) {
            this.retryPolicy = Objects.requireNonNull(retryPolicy, "retryPolicy");
            return this;
        }

        /** Extend the lease every third of its length while a handler runs. Default on. */
        public Builder watchdog(boolean on) {
            this.watchdog = on;
            return this;
        }

        public Guard build() {
            if (namespace == null) {
                throw new ConfigurationException(
                        "a Guard needs a namespace: call .namespace(\"your-consumer-group\") on the builder");
            }
            if (retention.compareTo(lease) < 0) {
                throw new ConfigurationException("retention (" + retention + ") must be at least the lease (" + lease
                        + "): a completion must outlive the claims it answers");
            }
            return new Guard(this);
        }

        private static Duration positive(String name, Duration value) {
            if (value == null || value.isNegative() || value.isZero()) {
                throw new ConfigurationException(name + " must be a positive duration, got " + value);
            }
            return value;
        }
    }
}
