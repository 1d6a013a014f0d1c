package dev.idem;

import dev.idem.IdempotencyEvent.GuardKind;
import dev.idem.internal.LeaseWatchdog;
import dev.idem.internal.SafeListener;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.Completion;
import dev.idem.spi.IdempotencyStore;
import dev.idem.spi.UpdateResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
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
 * <p>Never throws for a message-level problem: every handling ends in an {@link Outcome}, and a bad key or
 * fingerprint in {@link Outcome.Type#REJECTED}. An {@link Outcome.Type#IN_PROGRESS} answer for a key held by another
 * consumer hints {@link Outcome#retryAfter()} = this guard's lease: the latest a holder claiming with these settings
 * can still hold it, stated without comparing this JVM's clock with the store's (the holder's deadline, in the
 * store's clock, is in the reason). Other retries carry no hint: the broker adapter's {@link RetryPolicy} decides.
 *
 * <p>Immutable and thread-safe; one guard serves all consumer threads of a namespace. {@link #close()} stops its
 * lease watchdog.
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
    private final SafeListener listener;
    private final StoreFailurePolicy storeFailurePolicy;
    private final Duration waitForInProgress;
    private final @Nullable LeaseWatchdog watchdog;

    private Guard(Builder b) {
        this.store = b.store;
        this.namespace = Objects.requireNonNull(b.namespace);
        this.lease = b.lease;
        this.retention = b.retention;
        this.listener = new SafeListener(b.listener);
        this.storeFailurePolicy = b.storeFailurePolicy;
        this.waitForInProgress = b.waitForInProgress;
        this.watchdog = b.watchdog ? new LeaseWatchdog(store, listener, lease) : null;
    }

    /** A guard with every default: 30 s lease, 7 day retention, fail closed, retry in-progress duplicates later. */
    public static Guard of(IdempotencyStore store, String namespace) {
        return builder(store).namespace(namespace).build();
    }

    public static Builder builder(IdempotencyStore store) {
        return new Builder(store);
    }

    /** Runs {@code task} once per key: {@link Outcome.Type#PROCESSED} when it returns, see {@link #handle}. */
    public Outcome run(String key, Task task) {
        return handle(Delivery.of(key), ctx -> {
            task.run();
            return Outcome.processed();
        });
    }

    /**
     * Runs {@code handler} once per key of {@code delivery}; its fingerprint, if any, detects key reuse ({@link
     * Outcome.Type#REJECTED}). A duplicate that finds the key in progress waits up to {@code waitForInProgress}.
     */
    public Outcome handle(Delivery delivery, Handler handler) {
        long start = System.nanoTime();
        IdempotencyKey key;
        try {
            key = IdempotencyKey.of(namespace, delivery.key());
        } catch (InvalidKeyException invalid) {
            return reportHandled(null, Outcome.rejected(invalid.getMessage(), invalid), start);
        }
        Outcome outcome = invalidFingerprint(delivery);
        return reportHandled(key, outcome != null ? outcome : handleValid(key, delivery, handler), start);
    }

    /**
     * Handles a batch with one {@link IdempotencyStore#claimAll} round trip: the handler runs for each claimed
     * delivery in input order (with {@link HandlingContext#index()} its position), then one {@link
     * IdempotencyStore#completeAll} records the final ones; the others are released. Returns one outcome per
     * delivery, in input order. A key repeated within the batch runs once; its later copies answer {@code DUPLICATE}
     * if the first ended final, else {@code IN_PROGRESS}. Keys held by other consumers answer {@code IN_PROGRESS} at
     * once (a batch does not wait).
     */
    public List<Outcome> handleAll(List<Delivery> deliveries, Handler handler) {
        long start = System.nanoTime();
        Batch batch = new Batch(deliveries);
        batch.claim();
        batch.runAndComplete(handler);
        for (int i = 0; i < deliveries.size(); i++) {
            reportHandled(batch.keys[i], batch.outcomes[i], start);
        }
        return Arrays.asList(batch.outcomes);
    }

    private Outcome handleValid(IdempotencyKey key, Delivery delivery, Handler handler) {
        ClaimRequest request = ClaimRequest.of(key, newOwner(), lease).withFingerprint(delivery.fingerprint());
        long waitUntil = System.nanoTime() + waitForInProgress.toNanos();
        Duration poll = MIN_POLL;
        while (true) {
            ClaimResult claim;
            try {
                claim = store.claim(request);
            } catch (StoreUnavailableException e) {
                return storeUnavailable(key, delivery, 0, handler, e);
            }
            if (!(claim instanceof ClaimResult.InProgress busy)) {
                return answerClaim(key, delivery, 0, claim, handler);
            }
            if (mismatch(delivery.fingerprint(), busy.fingerprint())) {
                return keyReused(key);
            }
            if (System.nanoTime() + poll.toNanos() > waitUntil) {
                return inProgress(busy);
            }
            if (!sleep(poll)) {
                return Outcome.inProgress("interrupted while waiting for the other consumer", null);
            }
            poll = poll.multipliedBy(2).compareTo(MAX_POLL) > 0 ? MAX_POLL : poll.multipliedBy(2);
        }
    }

    /** The outcome of one claim answer: run the handler when acquired, else say what the store holds. */
    private Outcome answerClaim(IdempotencyKey key, Delivery delivery, int index, ClaimResult claim, Handler handler) {
        if (claim instanceof ClaimResult.Acquired acquired) {
            Outcome outcome = runClaimed(key, delivery, index, acquired, handler);
            return outcome.isFinal() ? complete(key, acquired.owner(), outcome) : outcome;
        }
        if (claim instanceof ClaimResult.Done done) {
            if (mismatch(delivery.fingerprint(), done.fingerprint())) {
                return keyReused(key);
            }
            return Outcome.duplicate("already processed at " + done.completedAt(), done.result());
        }
        ClaimResult.InProgress busy = (ClaimResult.InProgress) claim;
        return mismatch(delivery.fingerprint(), busy.fingerprint()) ? keyReused(key) : inProgress(busy);
    }

    private Outcome inProgress(ClaimResult.InProgress busy) {
        return Outcome.inProgress(
                "in progress by another consumer until " + busy.leaseUntil() + " (store clock)", lease);
    }

    /** Runs the handler under the watchdog; releases the claim unless the outcome is final (left to complete). */
    private Outcome runClaimed(
            IdempotencyKey key, Delivery delivery, int index, ClaimResult.Acquired claim, Handler handler) {
        var context = new HandlingContext(
                key, delivery, index, claim.owner(), claim.fencingToken(), claim instanceof ClaimResult.TakenOver);
        Outcome outcome;
        try (LeaseWatchdog.Watch ignored = watchdog == null ? null : watchdog.watch(key, claim.owner())) {
            outcome = Objects.requireNonNull(handler.handle(context), "a handler must return an Outcome, not null");
        } catch (Exception e) {
            outcome = Outcome.ofException(e);
        } catch (Error e) {
            release(key, claim.owner());
            throw e;
        }
        if (!outcome.isFinal()) {
            release(key, claim.owner());
        }
        return outcome;
    }

    private Outcome complete(IdempotencyKey key, String owner, Outcome outcome) {
        try {
            return completed(
                    key, outcome, store.complete(key, owner, outcome.result().orElse(null), retention));
        } catch (StoreUnavailableException e) {
            return completionNotRecorded(key, outcome, e);
        }
    }

    private Outcome completed(IdempotencyKey key, Outcome outcome, UpdateResult done) {
        if (done == UpdateResult.APPLIED) {
            return outcome;
        }
        String message = "lease ended before completion (" + done
                + "): another consumer may also have applied the effect; use a longer lease or keep the watchdog on";
        warn(IdempotencyEvent.Type.LEASE_LOST, key, message);
        return outcome.withReason(outcome.reason() + "; " + message);
    }

    private Outcome completionNotRecorded(IdempotencyKey key, Outcome outcome, StoreUnavailableException e) {
        String message = "effect applied but its completion was not recorded (" + e.getMessage()
                + "); a redelivery after the lease ends would apply it again";
        warn(IdempotencyEvent.Type.COMPLETION_NOT_RECORDED, key, message);
        return outcome.withReason(outcome.reason() + "; " + message);
    }

    private void release(IdempotencyKey key, String owner) {
        try {
            store.release(key, owner);
        } catch (StoreUnavailableException e) {
            warn(
                    IdempotencyEvent.Type.RELEASE_FAILED,
                    key,
                    "claim not released (" + e.getMessage() + "); redeliveries wait until the lease ends");
        }
    }

    private Outcome storeUnavailable(
            IdempotencyKey key, Delivery delivery, int index, Handler handler, StoreUnavailableException e) {
        if (storeFailurePolicy == StoreFailurePolicy.FAIL_CLOSED) {
            return Outcome.inProgress(e.getMessage(), null);
        }
        warn(IdempotencyEvent.Type.FAIL_OPEN, key, "running the handler WITHOUT a guard: " + e.getMessage());
        try {
            Outcome outcome = handler.handle(new HandlingContext(key, delivery, index, "unguarded", 0, false));
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

    /** {@code REJECTED} with the reason when the delivery's fingerprint is not valid, else null. */
    private static @Nullable Outcome invalidFingerprint(Delivery delivery) {
        return Fingerprint.problem(delivery.fingerprint())
                .map(Outcome::rejected)
                .orElse(null);
    }

    private Outcome reportHandled(@Nullable IdempotencyKey key, Outcome outcome, long start) {
        if (listener.listens()) {
            listener.onEvent(event(IdempotencyEvent.Type.HANDLED)
                    .keyLogId(key == null ? "<invalid>" : key.logId())
                    .outcome(outcome)
                    .elapsed(Duration.ofNanos(System.nanoTime() - start))
                    .build());
        }
        return outcome;
    }

    private void warn(IdempotencyEvent.Type type, IdempotencyKey key, String message) {
        LOG.log(System.Logger.Level.WARNING, "{0} {1}: {2}", type, key.logId(), message);
        listener.onEvent(event(type).keyLogId(key.logId()).message(message).build());
    }

    private IdempotencyEvent.Builder event(IdempotencyEvent.Type type) {
        return IdempotencyEvent.builder(type, namespace)
                .guardKind(GuardKind.LEASE)
                .source(store.describe());
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

    /** One {@link #handleAll} call: validation, the one claim round trip, the handlers, the one completion. */
    private final class Batch {
        final List<Delivery> deliveries;
        final @Nullable IdempotencyKey[] keys;
        final Outcome[] outcomes;
        /** Input index of each delivery that is claimed (the first of its key), in input order. */
        final List<Integer> claimed = new ArrayList<>();
        /** For a later copy of a key within the batch, the index of its first copy. */
        final Map<Integer, Integer> copyOf = new HashMap<>();

        final List<ClaimResult> claims = new ArrayList<>();

        @Nullable
        StoreUnavailableException unavailable;

        Batch(List<Delivery> deliveries) {
            this.deliveries = List.copyOf(deliveries);
            this.keys = new IdempotencyKey[deliveries.size()];
            this.outcomes = new Outcome[deliveries.size()];
            Map<String, Integer> firstOfKey = new HashMap<>();
            for (int i = 0; i < this.deliveries.size(); i++) {
                Delivery d = this.deliveries.get(i);
                try {
                    keys[i] = IdempotencyKey.of(namespace, d.key());
                } catch (InvalidKeyException invalid) {
                    outcomes[i] = Outcome.rejected(invalid.getMessage(), invalid);
                    continue;
                }
                Outcome invalid = invalidFingerprint(d);
                if (invalid != null) {
                    outcomes[i] = invalid;
                    continue;
                }
                Integer first = firstOfKey.putIfAbsent(keys[i].storageId(), i);
                if (first == null) {
                    claimed.add(i);
                } else if (mismatch(d.fingerprint(), this.deliveries.get(first).fingerprint())) {
                    outcomes[i] = keyReused(keys[i]);
                } else {
                    copyOf.put(i, first);
                }
            }
        }

        void claim() {
            List<ClaimRequest> requests = new ArrayList<>(claimed.size());
            for (int i : claimed) {
                requests.add(ClaimRequest.of(key(i), newOwner(), lease)
                        .withFingerprint(deliveries.get(i).fingerprint()));
            }
            try {
                claims.addAll(requests.isEmpty() ? List.of() : store.claimAll(requests));
            } catch (StoreUnavailableException e) {
                unavailable = e;
            }
        }

        void runAndComplete(Handler handler) {
            List<Completion> completions = new ArrayList<>();
            List<Integer> completing = new ArrayList<>();
            for (int n = 0; n < claimed.size(); n++) {
                int i = claimed.get(n);
                StoreUnavailableException down = unavailable;
                if (down != null) {
                    outcomes[i] = storeUnavailable(key(i), deliveries.get(i), i, handler, down);
                    continue;
                }
                ClaimResult claim = claims.get(n);
                if (!(claim instanceof ClaimResult.Acquired acquired)) {
                    outcomes[i] = answerClaim(key(i), deliveries.get(i), i, claim, handler);
                    continue;
                }
                outcomes[i] = runClaimed(key(i), deliveries.get(i), i, acquired, handler);
                if (outcomes[i].isFinal()) {
                    completions.add(Completion.of(
                            key(i), acquired.owner(), outcomes[i].result().orElse(null), retention));
                    completing.add(i);
                }
            }
            completeAll(completions, completing);
            copyOf.forEach((copy, first) -> outcomes[copy] = outcomes[first].isFinal()
                    ? Outcome.duplicate("same key earlier in this batch, applied")
                    : Outcome.inProgress(
                            "same key earlier in this batch, not applied: " + outcomes[first].reason(), null));
        }

        private void completeAll(List<Completion> completions, List<Integer> completing) {
            if (completions.isEmpty()) {
                return;
            }
            try {
                List<UpdateResult> results = store.completeAll(completions);
                for (int n = 0; n < completing.size(); n++) {
                    int i = completing.get(n);
                    outcomes[i] = completed(key(i), outcomes[i], results.get(n));
                }
            } catch (StoreUnavailableException e) {
                for (int i : completing) {
                    outcomes[i] = completionNotRecorded(key(i), outcomes[i], e);
                }
            }
        }

        private IdempotencyKey key(int i) {
            return Objects.requireNonNull(keys[i]);
        }
    }

    /** Builds a {@link Guard}. Each setter validates its value at once. */
    public static final class Builder {
        private final IdempotencyStore store;
        private @Nullable String namespace;
        private Duration lease = Duration.ofSeconds(30);
        private Duration retention = Duration.ofDays(7);
        private IdempotencyListener listener = IdempotencyListener.NONE;
        private StoreFailurePolicy storeFailurePolicy = StoreFailurePolicy.FAIL_CLOSED;
        private Duration waitForInProgress = Duration.ZERO;
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

        /** Told of every handling ({@link IdempotencyEvent.Type#HANDLED}) and every warning. Default none. */
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
         * answers with its outcome. Default zero: answer {@link Outcome.Type#IN_PROGRESS} at once. {@link
         * Guard#handleAll} never waits.
         */
        public Builder waitForInProgress(Duration bound) {
            if (bound == null || bound.isNegative()) {
                throw new ConfigurationException("waitForInProgress must be zero or positive, got " + bound);
            }
            this.waitForInProgress = bound;
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
