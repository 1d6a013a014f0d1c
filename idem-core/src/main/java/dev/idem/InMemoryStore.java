package dev.idem;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.IdempotencyStore;
import dev.idem.spi.StoredRecord;
import dev.idem.spi.UpdateResult;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * A lease store in this JVM's memory: leases, fencing tokens, owner checks, retention and batch claims, like every
 * other store (it passes the same contract suite). Marks live only as long as the JVM, so it guards one process;
 * use it for tests, demos and single-instance consumers whose duplicates come from redelivery within one run.
 *
 * <p>Expired completions are dropped lazily (they read as absent) and swept every {@value #SWEEP_EVERY} claims, or
 * on {@link #purgeExpired()}. Thread-safe; each operation is atomic per key without a global lock.
 */
public final class InMemoryStore implements IdempotencyStore {
    static final int SWEEP_EVERY = 4096;

    private final Clock clock;
    private final ConcurrentHashMap<String, Entry> entries = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, AtomicLong> fencing = new ConcurrentHashMap<>();
    private final AtomicLong claims = new AtomicLong();
    private volatile boolean closed;

    private InMemoryStore(Clock clock) {
        this.clock = clock;
    }

    /** A store on the system UTC clock. */
    public static InMemoryStore create() {
        return builder().build();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Builds {@link InMemoryStore}s. */
    public static final class Builder {
        private Clock clock = Clock.systemUTC();

        private Builder() {}

        /** The clock that decides lease and retention expiry. Default: the system UTC clock. */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        public InMemoryStore build() {
            return new InMemoryStore(clock);
        }
    }

    private record Entry(
            StoredRecord.State state,
            String owner,
            long fencingToken,
            Instant expiresAt,
            Instant completedAt,
            @Nullable String fingerprint,
            byte @Nullable [] result) {

        boolean live(Instant now) {
            return now.isBefore(expiresAt);
        }
    }

    @Override
    public ClaimResult claim(ClaimRequest request) {
        ensureOpen();
        if (claims.incrementAndGet() % SWEEP_EVERY == 0) {
            purgeExpired();
        }
        Instant now = clock.instant();
        Instant leaseUntil = now.plus(request.lease());
        ClaimResult[] answer = new ClaimResult[1];
        entries.compute(request.key().storageId(), (id, e) -> {
            if (e == null || (e.state() == StoredRecord.State.DONE && !e.live(now))) {
                long token = nextToken(request.key());
                answer[0] = new ClaimResult.Claimed(request.owner(), token, leaseUntil);
                return processing(request, token, leaseUntil, now);
            }
            if (e.state() == StoredRecord.State.DONE) {
                answer[0] = new ClaimResult.Done(e.completedAt(), e.expiresAt(), e.fingerprint(), e.result());
                return e;
            }
            if (e.owner().equals(request.owner())) {
                answer[0] = new ClaimResult.Claimed(request.owner(), e.fencingToken(), leaseUntil);
                return processing(request, e.fencingToken(), leaseUntil, now);
            }
            if (e.live(now)) {
                answer[0] = new ClaimResult.InProgress(e.owner(), e.expiresAt(), e.fingerprint());
                return e;
            }
            long token = nextToken(request.key());
            answer[0] = new ClaimResult.TakenOver(request.owner(), token, leaseUntil, e.owner());
            return processing(request, token, leaseUntil, now);
        });
        return answer[0];
    }

    private static Entry processing(ClaimRequest request, long token, Instant leaseUntil, Instant now) {
        return new Entry(
                StoredRecord.State.PROCESSING, request.owner(), token, leaseUntil, now, request.fingerprint(), null);
    }

    private long nextToken(IdempotencyKey key) {
        return fencing.computeIfAbsent(key.namespace(), ns -> new AtomicLong()).incrementAndGet();
    }

    @Override
    public UpdateResult complete(IdempotencyKey key, String owner, byte @Nullable [] result, Duration retention) {
        Instant now = ensureOpenAndNow();
        if (doneBy(key, owner)) {
            return UpdateResult.APPLIED; // the owner's completion, sent again after its reply was lost
        }
        return update(
                key,
                owner,
                now,
                e -> new Entry(
                        StoredRecord.State.DONE,
                        owner,
                        e.fencingToken(),
                        now.plus(retention),
                        now,
                        e.fingerprint(),
                        result == null ? null : result.clone()));
    }

    @Override
    public UpdateResult release(IdempotencyKey key, String owner) {
        return update(key, owner, ensureOpenAndNow(), e -> null);
    }

    @Override
    public UpdateResult extend(IdempotencyKey key, String owner, Duration lease) {
        Instant now = ensureOpenAndNow();
        if (doneBy(key, owner)) {
            return UpdateResult.APPLIED; // a watchdog tick that raced its owner's completion: nothing to extend
        }
        return update(
                key,
                owner,
                now,
                e -> new Entry(
                        e.state(), owner, e.fencingToken(), now.plus(lease), e.completedAt(), e.fingerprint(), null));
    }

    private boolean doneBy(IdempotencyKey key, String owner) {
        Entry current = entries.get(key.storageId());
        return current != null
                && current.state() == StoredRecord.State.DONE
                && current.owner().equals(owner);
    }

    /**
     * Applies {@code change} to the owner's live or expired-but-not-taken-over claim. A lapsed lease that nobody
     * took over still belongs to its owner: completing it late is safe, no one else ran the handler.
     */
    private UpdateResult update(
            IdempotencyKey key, String owner, Instant now, java.util.function.UnaryOperator<Entry> change) {
        UpdateResult[] answer = {UpdateResult.NOT_FOUND};
        entries.computeIfPresent(key.storageId(), (id, e) -> {
            if (e.state() == StoredRecord.State.DONE) {
                answer[0] = e.live(now) ? UpdateResult.NOT_OWNER : UpdateResult.NOT_FOUND;
                return e.live(now) ? e : null;
            }
            if (!e.owner().equals(owner)) {
                answer[0] = UpdateResult.NOT_OWNER;
                return e;
            }
            answer[0] = UpdateResult.APPLIED;
            return change.apply(e);
        });
        return answer[0];
    }

    @Override
    public Optional<StoredRecord> lookup(IdempotencyKey key) {
        Instant now = ensureOpenAndNow();
        Entry e = entries.get(key.storageId());
        if (e == null || (e.state() == StoredRecord.State.DONE && !e.live(now))) {
            return Optional.empty();
        }
        return Optional.of(StoredRecord.builder(key, e.state())
                .owner(e.owner())
                .fencingToken(e.fencingToken())
                .expiresAt(e.expiresAt())
                .fingerprint(e.fingerprint())
                .result(e.result())
                .build());
    }

    /** Removes completions past their retention; returns how many. Claims in progress are left alone. */
    public int purgeExpired() {
        Instant now = clock.instant();
        List<String> expired = new ArrayList<>();
        entries.forEach((id, e) -> {
            if (e.state() == StoredRecord.State.DONE && !e.live(now)) {
                expired.add(id);
            }
        });
        int removed = 0;
        for (String id : expired) {
            Entry e = entries.computeIfPresent(
                    id, (k, cur) -> cur.state() == StoredRecord.State.DONE && !cur.live(now) ? null : cur);
            removed += e == null ? 1 : 0;
        }
        return removed;
    }

    @Override
    public String describe() {
        return "in-memory";
    }

    @Override
    public void close() {
        closed = true;
    }

    private Instant ensureOpenAndNow() {
        ensureOpen();
        return clock.instant();
    }

    private void ensureOpen() {
        if (closed) {
            throw new StoreUnavailableException(describe(), "the store is closed", null);
        }
    }
}
