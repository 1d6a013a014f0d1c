package dev.idem;

import dev.idem.IdempotencyEvent.GuardKind;
import dev.idem.internal.Daemons;
import dev.idem.internal.LeaseBounds;
import dev.idem.internal.LeaseWatchdog;
import dev.idem.internal.SafeListener;
import dev.idem.internal.Timestamps;
import dev.idem.internal.UnderWay;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.Completion;
import dev.idem.spi.IdempotencyStore;
import dev.idem.spi.StoredRecord;
import dev.idem.spi.UpdateResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
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
 * <p>Never throws: every handling ends in an {@link Outcome} (a bad key or fingerprint in {@link
 * Outcome.Type#REJECTED}), whatever the store throws: a claim that fails answers {@link Outcome.Type#IN_PROGRESS}
 * (only a {@link StoreUnavailableException} is eligible for {@link StoreFailurePolicy#FAIL_OPEN}; any other store
 * failure never runs a handler unguarded), a completion or release that fails keeps the handler's outcome and is
 * reported to the listener. The one exception is an {@link Error} thrown by a handler: it is a crash, and passes
 * through untouched, leaving the claim to end with its lease (the redelivery then takes it over, with {@link
 * HandlingContext#tookOver()} true); only an {@link Exception} releases a claim. An {@link Outcome.Type#IN_PROGRESS} answer for a key held by another
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
    /** The longest the JVM's exit waits for completions still under way and their reports. */
    private static final Duration EXIT_WAIT = Duration.ofSeconds(10);
    /** Completions answered after their outcome, of every guard, until answered and reported. */
    private static final Set<CompletableFuture<Void>> LATE_COMPLETIONS = ConcurrentHashMap.newKeySet();

    static {
        UnderWay.awaitAtExit(
                new Thread(() -> UnderWay.awaitAll(List.copyOf(LATE_COMPLETIONS), EXIT_WAIT), "idem-guard-exit"));
    }

    private final IdempotencyStore store;
    private final String namespace;
    private final Duration lease;
    private final Duration retention;
    private final SafeListener listener;
    private final StoreFailurePolicy storeFailurePolicy;
    private final Duration waitForInProgress;
    private final String source;
    private final @Nullable LeaseWatchdog watchdog;
    /** Where a completion answered after its outcome is reported: a daemon thread of this guard's, when needed. */
    private final Executor lateReports;

    private volatile boolean closed;

    private Guard(Builder b) {
        this.store = b.store;
        this.namespace = Objects.requireNonNull(b.namespace);
        this.lease = b.lease;
        this.retention = b.retention;
        this.listener = new SafeListener(b.listener);
        this.storeFailurePolicy = b.storeFailurePolicy;
        this.waitForInProgress = b.waitForInProgress;
        this.source = store.describe();
        this.watchdog = b.watchdog ? new LeaseWatchdog(store, source, listener, lease) : null;
        this.lateReports = new ThreadPoolExecutor(
                0,
                1,
                10,
                TimeUnit.SECONDS,
                new LinkedBlockingQueue<>(),
                Daemons.named("idem-guard-late-completions " + namespace));
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
        if (closed) {
            return reportHandled(null, refusedClosed(), start);
        }
        IdempotencyKey key;
        try {
            key = IdempotencyKey.of(namespace, delivery.key());
        } catch (InvalidKeyException invalid) {
            return reportHandled(null, Outcome.rejected(String.valueOf(invalid.getMessage()), invalid), start);
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
     * once (a batch does not wait). The watchdog extends every claim of the batch from the claim round trip until
     * the completions are recorded. An {@link Error} from a handler records the completions of the handlings that
     * finished before it and passes through; the claims it leaves end with their leases, as after any crash.
     */
    public List<Outcome> handleAll(List<Delivery> deliveries, Handler handler) {
        long start = System.nanoTime();
        if (closed) {
            List<Outcome> refused = new ArrayList<>();
            for (int i = 0; i < deliveries.size(); i++) {
                refused.add(reportHandled(null, refusedClosed(), start));
            }
            return refused;
        }
        Batch batch = new Batch(deliveries);
        batch.claim();
        batch.runAndComplete(handler);
        for (int i = 0; i < deliveries.size(); i++) {
            reportHandled(batch.keys[i], batch.outcomes[i], start);
        }
        return Arrays.asList(batch.outcomes);
    }

    private Outcome refusedClosed() {
        return Outcome.inProgress(
                "guard is closed (namespace " + namespace + "): nothing ran; the message stays unacknowledged"
                        + " for a live consumer (stop consuming before closing the guard)",
                null);
    }

    private Outcome handleValid(IdempotencyKey key, Delivery delivery, Handler handler) {
        ClaimRequest request = ClaimRequest.of(key, newOwner(), lease).withFingerprint(delivery.fingerprint());
        long waitStart = System.nanoTime();
        long waitNanos = waitForInProgress.toNanos();
        Duration poll = MIN_POLL;
        while (true) {
            ClaimResult claim;
            try {
                claim = Objects.requireNonNull(store.claim(request), "the store answered a claim with null");
            } catch (StoreUnavailableException e) {
                return storeUnavailable(key, delivery, 0, handler, e);
            } catch (RuntimeException e) {
                return storeFailed(key, "claim", e);
            }
            if (!(claim instanceof ClaimResult.InProgress busy)) {
                return answerClaim(key, delivery, 0, claim, handler);
            }
            if (mismatch(delivery.fingerprint(), busy.fingerprint())) {
                return keyReused(key);
            }
            if (System.nanoTime() - waitStart + poll.toNanos() > waitNanos) {
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
            Outcome outcome = runClaimed(key, delivery, index, acquired, handler, null);
            if (outcome.isFinal() && outcome.completionRecordedFor(acquired.owner())) {
                return committedCompletion(key, acquired.owner(), outcome);
            }
            return outcome.isFinal() ? complete(key, acquired.owner(), outcome) : outcome;
        }
        if (claim instanceof ClaimResult.Done done) {
            if (mismatch(delivery.fingerprint(), done.fingerprint())) {
                return keyReused(key);
            }
            return Outcome.duplicate("already processed at " + Timestamps.iso(done.completedAt()), done.result());
        }
        ClaimResult.InProgress busy = (ClaimResult.InProgress) claim;
        return mismatch(delivery.fingerprint(), busy.fingerprint()) ? keyReused(key) : inProgress(busy);
    }

    /**
     * A final outcome whose completion the handler's transaction wrote: unless that transaction answers final only once
     * committed ({@link Outcome#withCompletionCommitted}), the guard reads the claim back to learn that it committed. A transaction manager may roll back at a commit that reports nothing (PostgreSQL after
     * a statement error the handler caught), and a connection in manual commit that nobody commits loses the
     * completion: the claim is then still this handling's, and the effect is not applied with it, so the claim is
     * released and the message retried. A store that cannot answer leaves the outcome as it is, warned.
     */
    private Outcome committedCompletion(IdempotencyKey key, String owner, Outcome outcome) {
        if (outcome.completionCommitted()) {
            return outcome;
        }
        Optional<StoredRecord> record;
        try {
            record = afterTheHandler(() -> store.lookup(key));
        } catch (RuntimeException e) {
            return completionNotRecorded(key, outcome, e);
        }
        if (record.isPresent()
                && record.get().state() == StoredRecord.State.DONE
                && record.get().owner().equals(owner)) {
            return outcome;
        }
        if (record.isEmpty() || record.get().state() != StoredRecord.State.PROCESSING) {
            return completed(key, outcome, UpdateResult.NOT_OWNER);
        }
        release(key, owner);
        String message = "the transaction that wrote the completion did not commit (rolled back at its commit, e.g."
                + " after a failed statement the handler caught, or never committed: not the transaction of the"
                + " handler's writes); nothing was completed, retry";
        warn(IdempotencyEvent.Type.COMPLETION_NOT_RECORDED, key, message);
        return Outcome.failed(message, null);
    }

    private Outcome inProgress(ClaimResult.InProgress busy) {
        return Outcome.inProgress(
                "in progress by another consumer until " + Timestamps.iso(busy.leaseUntil()) + " (store clock)", lease);
    }

    /**
     * Runs the handler under the watchdog ({@code held}: a watch the caller keeps until it records the completion,
     * else one for the handler's run only); releases the claim unless the outcome is final (left to complete). An
     * Error passes untouched: a crash keeps the claim, which ends with its lease.
     */
    private Outcome runClaimed(
            IdempotencyKey key,
            Delivery delivery,
            int index,
            ClaimResult.Acquired claim,
            Handler handler,
            LeaseWatchdog.@Nullable Watch held) {
        LeaseWatchdog.Watch watch = held != null ? held : watch(key, claim.owner());
        var context = new HandlingContext(
                key,
                delivery,
                index,
                claim.owner(),
                claim.fencingToken(),
                claim instanceof ClaimResult.TakenOver,
                retention,
                watch == null ? condition -> {} : watch::pauseWhile);
        Outcome outcome;
        try {
            outcome = Objects.requireNonNull(handler.handle(context), "a handler must return an Outcome, not null");
        } catch (Exception e) {
            outcome = Outcome.ofException(e);
        } finally {
            if (held == null && watch != null) {
                watch.close();
            }
        }
        if (!outcome.isFinal()) {
            if (watch != null) {
                watch.close();
            }
            release(key, claim.owner());
        }
        return outcome;
    }

    private LeaseWatchdog.@Nullable Watch watch(IdempotencyKey key, String owner) {
        return watchdog == null ? null : watchdog.watch(key, owner);
    }

    /**
     * Records the completion. A store that answers later (it pipelines the completion with the next command) leaves
     * the outcome as it is: a completion that did not apply is reported to the listener when its answer comes, on a
     * thread of the guard's (never the store client's, which a listener may need), as one answered at once is (and
     * noted on the outcome).
     */
    private Outcome complete(IdempotencyKey key, String owner, Outcome outcome) {
        CompletableFuture<UpdateResult> sent;
        try {
            sent = afterTheHandler(() -> Objects.requireNonNull(
                            store.completeAsync(key, owner, outcome.result().orElse(null), retention),
                            "the store answered a completion with null"))
                    .toCompletableFuture();
        } catch (RuntimeException e) {
            return completionNotRecorded(key, outcome, e);
        }
        if (!sent.isDone()) {
            CompletableFuture<Void> settled = new CompletableFuture<>();
            LATE_COMPLETIONS.add(settled);
            sent.whenComplete((done, failure) -> {
                if (failure == null && done == UpdateResult.APPLIED) {
                    settle(settled);
                } else {
                    lateReports.execute(() -> {
                        try {
                            completionProblem(key, done, failure);
                        } finally {
                            settle(settled);
                        }
                    });
                }
            });
            return outcome;
        }
        try {
            UpdateResult done = sent.join();
            return done == null
                    ? completionNotRecorded(
                            key, outcome, new NullPointerException("the store answered a completion with null"))
                    : completed(key, outcome, done);
        } catch (CompletionException | CancellationException e) {
            return completionNotRecorded(key, outcome, e);
        }
    }

    private static void settle(CompletableFuture<Void> late) {
        LATE_COMPLETIONS.remove(late);
        late.complete(null);
    }

    private Outcome completed(IdempotencyKey key, Outcome outcome, UpdateResult done) {
        return amended(outcome, completionProblem(key, done, null));
    }

    private Outcome completionNotRecorded(IdempotencyKey key, Outcome outcome, Throwable e) {
        return amended(outcome, completionProblem(key, null, e));
    }

    private static Outcome amended(Outcome outcome, @Nullable String problem) {
        return problem == null ? outcome : outcome.withReason(outcome.reason() + "; " + problem);
    }

    /** Warns when a completion did not apply and says why; null when it applied. */
    private @Nullable String completionProblem(
            IdempotencyKey key, @Nullable UpdateResult done, @Nullable Throwable failure) {
        if (failure == null && done == UpdateResult.APPLIED) {
            return null;
        }
        if (failure != null || done == null) {
            Throwable cause =
                    failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
            String message = "effect applied but its completion was not recorded ("
                    + (cause == null ? "the store answered a completion with null" : describe(cause))
                    + "); a redelivery after the lease ends would apply it again";
            warn(IdempotencyEvent.Type.COMPLETION_NOT_RECORDED, key, message);
            return message;
        }
        String message = "lease ended before completion (" + done
                + "): another consumer may also have applied the effect; use a longer lease or keep the watchdog on";
        warn(IdempotencyEvent.Type.LEASE_LOST, key, message);
        return message;
    }

    private void release(IdempotencyKey key, String owner) {
        try {
            afterTheHandler(() -> store.release(key, owner));
        } catch (RuntimeException e) {
            warn(
                    IdempotencyEvent.Type.RELEASE_FAILED,
                    key,
                    "claim not released (" + describe(e) + "); redeliveries wait until the lease ends");
        }
    }

    /** A store call failed in a way that is not "unavailable" (a driver bug, an overflow): retry later, run nothing. */
    private Outcome storeFailed(IdempotencyKey key, String operation, RuntimeException e) {
        String message = source + " failed on " + operation + " (" + describe(e) + "); nothing ran, retry later";
        warn(IdempotencyEvent.Type.STORE_UNAVAILABLE, key, message);
        return Outcome.inProgress(message, null);
    }

    private static String describe(Throwable e) {
        return e instanceof StoreUnavailableException ? String.valueOf(e.getMessage()) : e.toString();
    }

    private Outcome storeUnavailable(
            IdempotencyKey key, Delivery delivery, int index, Handler handler, StoreUnavailableException e) {
        if (storeFailurePolicy == StoreFailurePolicy.FAIL_CLOSED) {
            String problem = String.valueOf(e.getMessage());
            warn(IdempotencyEvent.Type.STORE_UNAVAILABLE, key, problem + "; nothing ran, retry later");
            return Outcome.inProgress(problem, null);
        }
        warn(IdempotencyEvent.Type.FAIL_OPEN, key, "running the handler WITHOUT a guard: " + e.getMessage());
        try {
            Outcome outcome = handler.handle(new HandlingContext(
                    key, delivery, index, HandlingContext.UNGUARDED, 0, false, retention, condition -> {}));
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
                .source(source);
    }

    /**
     * Runs a store call that records what a handler did with the thread's interrupt set aside, then restores it: a
     * handler that keeps its interrupt (or throws {@link InterruptedException}) must not make a store client refuse
     * to wait for the reply, which would leave an applied effect unrecorded or a claim held.
     */
    private static <T> T afterTheHandler(Supplier<T> storeCall) {
        boolean interrupted = Thread.interrupted();
        try {
            return storeCall.get();
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
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

    /**
     * Closes the guard: later calls run nothing and answer {@link Outcome.Type#IN_PROGRESS} saying the guard is
     * closed (the message is retried by a live consumer; it is never counted as a handler failure). Handlings already
     * running finish normally, their leases still extended. Does not close the store. Idempotent.
     */
    @Override
    public void close() {
        closed = true;
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

        @Nullable
        RuntimeException failure;

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
                    outcomes[i] = Outcome.rejected(String.valueOf(invalid.getMessage()), invalid);
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
            if (requests.isEmpty()) {
                return;
            }
            try {
                List<ClaimResult> answers = store.claimAll(requests);
                if (answers.size() != requests.size() || answers.contains(null)) {
                    throw new IllegalStateException(
                            "the store answered " + answers.size() + " claims for " + requests.size() + " requests");
                }
                claims.addAll(answers);
            } catch (StoreUnavailableException e) {
                unavailable = e;
            } catch (RuntimeException e) {
                failure = e;
            }
        }

        void runAndComplete(Handler handler) {
            List<Completion> completions = new ArrayList<>();
            List<Integer> completing = new ArrayList<>();
            // Every claim of the batch is extended from the claim round trip until its completion is recorded.
            List<LeaseWatchdog.@Nullable Watch> watches = new ArrayList<>();
            try {
                for (int n = 0; n < claims.size(); n++) {
                    watches.add(
                            claims.get(n) instanceof ClaimResult.Acquired a
                                    ? watch(key(claimed.get(n)), a.owner())
                                    : null);
                }
                for (int n = 0; n < claimed.size(); n++) {
                    int i = claimed.get(n);
                    outcomes[i] = handleClaimed(
                            n, i, handler, n < watches.size() ? watches.get(n) : null, completions, completing);
                }
                completeAll(completions, completing);
            } catch (Error crash) {
                completeAll(completions, completing); // what was applied before the crash is recorded
                throw crash;
            } finally {
                watches.forEach(w -> {
                    if (w != null) {
                        w.close();
                    }
                });
            }
            copyOf.forEach((copy, first) -> outcomes[copy] = outcomes[first].isFinal()
                    ? Outcome.duplicate("same key earlier in this batch, applied")
                    : Outcome.inProgress(
                            "same key earlier in this batch, not applied: " + outcomes[first].reason(), null));
        }

        private Outcome handleClaimed(
                int n,
                int i,
                Handler handler,
                LeaseWatchdog.@Nullable Watch watch,
                List<Completion> completions,
                List<Integer> completing) {
            StoreUnavailableException down = unavailable;
            if (down != null) {
                return storeUnavailable(key(i), deliveries.get(i), i, handler, down);
            }
            RuntimeException failed = failure;
            if (failed != null) {
                return storeFailed(key(i), "claimAll", failed);
            }
            ClaimResult claim = claims.get(n);
            if (!(claim instanceof ClaimResult.Acquired acquired)) {
                return answerClaim(key(i), deliveries.get(i), i, claim, handler);
            }
            Outcome outcome = runClaimed(key(i), deliveries.get(i), i, acquired, handler, watch);
            if (outcome.isFinal() && outcome.completionRecordedFor(acquired.owner())) {
                return committedCompletion(key(i), acquired.owner(), outcome);
            }
            if (outcome.isFinal()) {
                completions.add(
                        Completion.of(key(i), acquired.owner(), outcome.result().orElse(null), retention));
                completing.add(i);
            }
            return outcome;
        }

        private void completeAll(List<Completion> completions, List<Integer> completing) {
            if (completions.isEmpty()) {
                return;
            }
            List<UpdateResult> results;
            try {
                results = afterTheHandler(() -> store.completeAll(completions));
                if (results.size() != completions.size() || results.contains(null)) {
                    throw new IllegalStateException(
                            "the store answered " + results.size() + " completions for " + completions.size());
                }
            } catch (RuntimeException e) {
                for (int i : completing) {
                    outcomes[i] = completionNotRecorded(key(i), outcomes[i], e);
                }
                return;
            }
            for (int n = 0; n < completing.size(); n++) {
                int i = completing.get(n);
                outcomes[i] = completed(key(i), outcomes[i], results.get(n));
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
        private Duration retention = HandlingContext.DEFAULT_RETENTION;
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
            this.lease = LeaseBounds.setting("lease", lease);
            return this;
        }

        /** How long a completion is remembered; duplicates later than this run again. Default 7 days. */
        public Builder retention(Duration retention) {
            this.retention = LeaseBounds.setting("retention", retention);
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
            this.waitForInProgress = bounded("waitForInProgress", bound);
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

        /** Refuses what would overflow the stores' and the guard's time arithmetic (e.g. ChronoUnit.FOREVER). */
        private static Duration bounded(String name, Duration value) {
            LeaseBounds.tooLong(name, value).ifPresent(problem -> {
                throw new ConfigurationException(problem);
            });
            return value;
        }
    }
}
