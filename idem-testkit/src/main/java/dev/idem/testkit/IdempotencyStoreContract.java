package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.idem.Delivery;
import dev.idem.Fingerprint;
import dev.idem.Guard;
import dev.idem.IdempotencyKey;
import dev.idem.Outcome;
import dev.idem.StoreUnavailableException;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.Completion;
import dev.idem.spi.IdempotencyStore;
import dev.idem.spi.StoredRecord;
import dev.idem.spi.UpdateResult;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterProperty;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The contract every {@link IdempotencyStore} passes. A store's test extends it and says how to make the store:
 *
 * <pre>{@code
 * class RedisStoreContractTest extends IdempotencyStoreContract {
 *     protected IdempotencyStore createStore(Clock clock) { return RedisStore.builder(url).clock(clock).build(); }
 *     protected IdempotencyStore createUnavailableStore(Clock clock) { ... a closed port ... }
 * }
 * }</pre>
 *
 * Time is driven by a {@link MutableClock} handed to the store; nothing sleeps. A store that {@linkplain
 * #keepsItsOwnTime() keeps its own time} (a database's, a server's) runs the same cases on real time instead: the
 * cases that move time use a lease of {@link #OWN_TIME_LEASE} and sleep. Each test uses its own namespace, so tests
 * never see each other's keys. {@link #randomDeliverySequences_keepEveryEffectExactlyOnce} replays random sequences
 * of deliveries, failures, crashes and lease expiries (jqwik); a slow store, or one on its own time, may override it
 * with fewer tries.
 */
public abstract class IdempotencyStoreContract {
    protected static final Duration LEASE = Duration.ofSeconds(30);
    protected static final Duration RETENTION = Duration.ofHours(1);

    protected final MutableClock clock = MutableClock.atNow();
    protected IdempotencyStore store;
    protected String namespace;

    /** A store whose lease and retention decisions follow {@code clock}. */
    protected abstract IdempotencyStore createStore(Clock clock);

    /** A store that cannot reach its backend (e.g. pointed at a closed port), to check the documented exception. */
    protected abstract IdempotencyStore createUnavailableStore(Clock clock);

    /**
     * True when the store reads its backend's clock instead of {@code clock} (a database's or a server's time): the
     * cases that move time then run on real time with {@link #OWN_TIME_LEASE} and {@link #OWN_TIME_RETENTION}, and
     * times are compared with {@link #OWN_TIME_TOLERANCE}. Default false.
     */
    protected boolean keepsItsOwnTime() {
        return false;
    }

    /** How far a store on its own time may be from this JVM's clock in the contract's time checks. */
    protected static final Duration OWN_TIME_TOLERANCE = Duration.ofSeconds(20);

    /** The lease of the cases that move time, for a store on its own time: each such case sleeps about this long. */
    protected static final Duration OWN_TIME_LEASE = Duration.ofMillis(1500);

    /** The retention of the cases that move time, for a store on its own time. */
    protected static final Duration OWN_TIME_RETENTION = Duration.ofSeconds(2);

    /**
     * How far past (or short of) a deadline the cases that move time go: a millisecond on a {@link MutableClock}; on
     * real time, enough to cover a round trip to the store on a loaded machine.
     */
    private Duration margin() {
        return keepsItsOwnTime() ? Duration.ofMillis(400) : Duration.ofMillis(1);
    }

    /** The lease of the cases that move time: {@link #LEASE}, or {@link #OWN_TIME_LEASE} on the store's own time. */
    protected Duration timedLease() {
        return keepsItsOwnTime() ? OWN_TIME_LEASE : LEASE;
    }

    /** The retention of the cases that move time: {@link #RETENTION}, or {@link #OWN_TIME_RETENTION}. */
    protected Duration timedRetention() {
        return keepsItsOwnTime() ? OWN_TIME_RETENTION : RETENTION;
    }

    /**
     * Moves the store's time on: {@link #clock}, and for a store that {@linkplain #keepsItsOwnTime() keeps its own},
     * real time too (a sleep).
     */
    protected void advance(Duration duration) {
        pass(clock, duration);
    }

    private void pass(MutableClock time, Duration duration) {
        if (keepsItsOwnTime()) {
            try {
                Thread.sleep(duration.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for the store's time to pass", e);
            }
        }
        time.advance(duration);
    }

    private void assertTime(Instant actual, Instant expected) {
        if (keepsItsOwnTime()) {
            assertThat(actual).isCloseTo(expected, within(OWN_TIME_TOLERANCE.toMillis(), ChronoUnit.MILLIS));
        } else {
            assertThat(actual).isEqualTo(expected);
        }
    }

    @BeforeEach
    void openStore() {
        store = createStore(clock);
        namespace = "c" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
    }

    @AfterEach
    void closeStore() {
        store.close();
    }

    protected IdempotencyKey key(String k) {
        return IdempotencyKey.of(namespace, k);
    }

    private static ClaimRequest claimOf(IdempotencyKey key, String owner) {
        return ClaimRequest.of(key, owner, LEASE);
    }

    private ClaimResult claim(String k, String owner) {
        return store.claim(claimOf(key(k), owner));
    }

    /** A claim of a case that moves time, with {@link #timedLease()}. */
    private ClaimResult timedClaim(String k, String owner) {
        return store.claim(ClaimRequest.of(key(k), owner, timedLease()));
    }

    @Test
    void firstClaim_ofNewKey_isClaimed_withLeaseFromNow() {
        ClaimResult result = claim("order-1:PAY", "owner-a");

        assertThat(result).isInstanceOfSatisfying(ClaimResult.Claimed.class, c -> {
            assertThat(c.owner()).isEqualTo("owner-a");
            assertThat(c.fencingToken()).isPositive();
            assertTime(c.leaseUntil(), clock.instant().plus(LEASE));
        });
    }

    @Test
    void claim_afterCompletion_isDone_withStoredResultAndFingerprint() {
        store.claim(ClaimRequest.of(key("k"), "owner-a", LEASE).withFingerprint("fp-1"));
        assertThat(store.complete(key("k"), "owner-a", bytes("receipt-42"), RETENTION))
                .isEqualTo(UpdateResult.APPLIED);

        ClaimResult again = claim("k", "owner-b");

        assertThat(again).isInstanceOfSatisfying(ClaimResult.Done.class, d -> {
            assertThat(d.result()).isEqualTo(bytes("receipt-42"));
            assertThat(d.fingerprint()).isEqualTo("fp-1");
            assertTime(d.completedAt(), clock.instant());
            assertTime(d.expiresAt(), clock.instant().plus(RETENTION));
        });
    }

    @Test
    void claim_byOtherOwner_whileInProgress_isInProgress_untilLeaseEnds() {
        store.claim(ClaimRequest.of(key("k"), "owner-a", timedLease()).withFingerprint("fp-1"));
        advance(timedLease().minus(margin()));

        assertThat(timedClaim("k", "owner-b")).isInstanceOfSatisfying(ClaimResult.InProgress.class, p -> {
            assertThat(p.owner()).isEqualTo("owner-a");
            assertThat(p.fingerprint()).isEqualTo("fp-1");
            assertTime(p.leaseUntil(), clock.instant().plus(margin()));
        });
    }

    @Test
    void claim_retriedBySameOwner_afterClientTimeout_isClaimedAgain_withSameFencingToken() {
        var first = (ClaimResult.Claimed) timedClaim("k", "owner-a");
        advance(margin());

        ClaimResult retried = timedClaim("k", "owner-a");

        assertThat(retried).isInstanceOfSatisfying(ClaimResult.Claimed.class, c -> {
            assertThat(c.fencingToken()).isEqualTo(first.fencingToken());
            assertTime(c.leaseUntil(), clock.instant().plus(timedLease()));
        });
    }

    @Test
    @Timeout(60)
    void concurrentClaims_ofOneKey_exactlyOneWins() throws Exception {
        int threads = 8;
        for (int round = 0; round < 20; round++) {
            String k = "race-" + round;
            CountDownLatch start = new CountDownLatch(1);
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            try {
                List<Future<ClaimResult>> results = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    String owner = "owner-" + t;
                    results.add(pool.submit(() -> {
                        start.await();
                        return claim(k, owner);
                    }));
                }
                start.countDown();
                int winners = 0;
                for (Future<ClaimResult> f : results) {
                    ClaimResult r = f.get(30, TimeUnit.SECONDS);
                    assertThat(r).isInstanceOfAny(ClaimResult.Claimed.class, ClaimResult.InProgress.class);
                    winners += r instanceof ClaimResult.Claimed ? 1 : 0;
                }
                assertThat(winners).as("winners of round %d", round).isEqualTo(1);
            } finally {
                pool.shutdownNow();
            }
        }
    }

    @Test
    void claim_afterLeaseExpired_takesOver_withGreaterFencingToken() {
        var first = (ClaimResult.Claimed) timedClaim("k", "owner-a");
        advance(timedLease().plus(margin()));

        ClaimResult second = timedClaim("k", "owner-b");

        assertThat(second).isInstanceOfSatisfying(ClaimResult.TakenOver.class, t -> {
            assertThat(t.owner()).isEqualTo("owner-b");
            assertThat(t.previousOwner()).isEqualTo("owner-a");
            assertThat(t.fencingToken()).isGreaterThan(first.fencingToken());
        });
    }

    @Test
    void complete_byStaleOwner_afterTakeover_isNotOwner_andLeavesNewOwnersClaim() {
        timedClaim("k", "owner-a");
        advance(timedLease().plus(margin()));
        timedClaim("k", "owner-b");

        assertThat(store.complete(key("k"), "owner-a", bytes("stale"), RETENTION))
                .isEqualTo(UpdateResult.NOT_OWNER);

        assertThat(store.lookup(key("k"))).hasValueSatisfying(r -> {
            assertThat(r.state()).isEqualTo(StoredRecord.State.PROCESSING);
            assertThat(r.owner()).isEqualTo("owner-b");
        });
        assertThat(store.complete(key("k"), "owner-b", null, RETENTION)).isEqualTo(UpdateResult.APPLIED);
    }

    @Test
    void release_byStaleOwner_afterTakeover_isNotOwner_andKeepsNewOwnersClaim() {
        timedClaim("k", "owner-a");
        advance(timedLease().plus(margin()));
        timedClaim("k", "owner-b");

        assertThat(store.release(key("k"), "owner-a")).isEqualTo(UpdateResult.NOT_OWNER);
        assertThat(claim("k", "owner-c")).isInstanceOf(ClaimResult.InProgress.class);
    }

    @Test
    void release_byOwner_letsTheRedeliveryClaim() {
        claim("k", "owner-a");

        assertThat(store.release(key("k"), "owner-a")).isEqualTo(UpdateResult.APPLIED);

        assertThat(claim("k", "owner-b")).isInstanceOf(ClaimResult.Claimed.class);
    }

    @Test
    void completedKey_afterRetention_isClaimedAsNew() {
        timedClaim("k", "owner-a");
        store.complete(key("k"), "owner-a", null, timedRetention());
        advance(timedRetention().minus(margin()));
        assertThat(timedClaim("k", "owner-b")).isInstanceOf(ClaimResult.Done.class);

        advance(margin().multipliedBy(2));

        assertThat(timedClaim("k", "owner-b")).isInstanceOf(ClaimResult.Claimed.class);
    }

    @Test
    void extend_byOwner_keepsTheClaimPastItsFirstLease() {
        timedClaim("k", "owner-a");
        advance(timedLease().minus(margin()));

        assertThat(store.extend(key("k"), "owner-a", timedLease())).isEqualTo(UpdateResult.APPLIED);
        advance(margin().multipliedBy(2));

        assertThat(timedClaim("k", "owner-b")).isInstanceOf(ClaimResult.InProgress.class);
    }

    @Test
    void extend_byStaleOwner_isNotOwner() {
        timedClaim("k", "owner-a");
        advance(timedLease().plus(margin()));
        timedClaim("k", "owner-b");

        assertThat(store.extend(key("k"), "owner-a", timedLease())).isEqualTo(UpdateResult.NOT_OWNER);
    }

    @Test
    void complete_release_extend_ofUnknownKey_areNotFound() {
        assertThat(store.complete(key("nobody"), "owner-a", null, RETENTION)).isEqualTo(UpdateResult.NOT_FOUND);
        assertThat(store.release(key("nobody"), "owner-a")).isEqualTo(UpdateResult.NOT_FOUND);
        assertThat(store.extend(key("nobody"), "owner-a", LEASE)).isEqualTo(UpdateResult.NOT_FOUND);
    }

    @Test
    void completeAsync_answersAsCompleteDoes_andTheClaimIsDoneOnceAnswered() throws Exception {
        claim("k", "owner-a");
        claim("other", "owner-a");

        UpdateResult mine = store.completeAsync(key("k"), "owner-a", bytes("receipt"), RETENTION)
                .toCompletableFuture()
                .get(10, TimeUnit.SECONDS);
        UpdateResult notMine = store.completeAsync(key("other"), "owner-b", null, RETENTION)
                .toCompletableFuture()
                .get(10, TimeUnit.SECONDS);

        assertThat(mine).isEqualTo(UpdateResult.APPLIED);
        assertThat(notMine).isEqualTo(UpdateResult.NOT_OWNER);
        assertThat(claim("k", "owner-b"))
                .isInstanceOfSatisfying(
                        ClaimResult.Done.class, d -> assertThat(d.result()).isEqualTo(bytes("receipt")));
        assertThat(store.lookup(key("other")))
                .hasValueSatisfying(r -> assertThat(r.state()).isEqualTo(StoredRecord.State.PROCESSING));
    }

    @Test
    void complete_ofDoneKey_byAnother_isNotOwner_andKeepsFirstResult() {
        claim("k", "owner-a");
        store.complete(key("k"), "owner-a", bytes("first"), RETENTION);

        assertThat(store.complete(key("k"), "owner-b", bytes("second"), RETENTION))
                .isEqualTo(UpdateResult.NOT_OWNER);
        assertThat(store.lookup(key("k")).orElseThrow().result()).isEqualTo(bytes("first"));
    }

    @Test
    void complete_retriedByItsOwner_afterALostReply_isApplied_andKeepsTheFirstResult() {
        claim("k", "owner-a");
        assertThat(store.complete(key("k"), "owner-a", bytes("first"), RETENTION))
                .isEqualTo(UpdateResult.APPLIED);

        assertThat(store.complete(key("k"), "owner-a", bytes("first"), RETENTION))
                .as("the same completion sent again after its reply was lost")
                .isEqualTo(UpdateResult.APPLIED);
        assertThat(store.lookup(key("k"))).hasValueSatisfying(r -> {
            assertThat(r.state()).isEqualTo(StoredRecord.State.DONE);
            assertThat(r.result()).isEqualTo(bytes("first"));
        });
    }

    /**
     * A watchdog tick still in flight when its owner's completion lands (a batch's claims are extended until their
     * completions are recorded) is no lost lease: APPLIED, and the completion keeps its retention. JDBC and in-memory
     * answered NOT_OWNER, so the guard reported a false LEASE_LOST; Redis already answered APPLIED.
     */
    @Test
    void extend_byOwner_afterItsOwnCompletion_isApplied_andLeavesTheCompletionAsItIs() {
        claim("k", "owner-a");
        store.complete(key("k"), "owner-a", bytes("receipt"), RETENTION);

        assertThat(store.extend(key("k"), "owner-a", LEASE)).isEqualTo(UpdateResult.APPLIED);
        assertThat(store.extend(key("k"), "owner-b", LEASE)).isEqualTo(UpdateResult.NOT_OWNER);

        assertThat(store.lookup(key("k"))).hasValueSatisfying(r -> {
            assertThat(r.state()).isEqualTo(StoredRecord.State.DONE);
            assertThat(r.result()).isEqualTo(bytes("receipt"));
            assertTime(r.expiresAt(), clock.instant().plus(RETENTION));
        });
    }

    @Test
    void lookup_showsClaimsAndCompletions_andNothingForUnknownKeys() {
        claim("busy", "owner-a");
        claim("done", "owner-a");
        store.complete(key("done"), "owner-a", null, RETENTION);

        assertThat(store.lookup(key("busy"))).hasValueSatisfying(r -> {
            assertThat(r.state()).isEqualTo(StoredRecord.State.PROCESSING);
            assertTime(r.expiresAt(), clock.instant().plus(LEASE));
        });
        assertThat(store.lookup(key("done"))).hasValueSatisfying(r -> {
            assertThat(r.state()).isEqualTo(StoredRecord.State.DONE);
            assertTime(r.expiresAt(), clock.instant().plus(RETENTION));
        });
        assertThat(store.lookup(key("unknown"))).isEmpty();
    }

    @Test
    void fencingTokens_growWithEveryClaimOfTheNamespace() {
        long previous = 0;
        for (int i = 0; i < 10; i++) {
            var c = (ClaimResult.Acquired) claim("f" + i, "owner-a");
            assertThat(c.fencingToken()).isGreaterThan(previous);
            previous = c.fencingToken();
        }
    }

    @Test
    void claimAll_answersEachKeyInRequestOrder_newDoneAndInProgress() {
        claim("done", "owner-x");
        store.complete(key("done"), "owner-x", null, RETENTION);
        claim("busy", "owner-x");

        List<ClaimResult> results = store.claimAll(List.of(
                claimOf(key("zeta-new"), "owner-a"),
                claimOf(key("done"), "owner-a"),
                claimOf(key("busy"), "owner-a"),
                claimOf(key("alpha-new"), "owner-a")));

        assertThat(results).hasSize(4);
        assertThat(results.get(0)).isInstanceOf(ClaimResult.Claimed.class);
        assertThat(results.get(1)).isInstanceOf(ClaimResult.Done.class);
        assertThat(results.get(2)).isInstanceOf(ClaimResult.InProgress.class);
        assertThat(results.get(3)).isInstanceOf(ClaimResult.Claimed.class);
        assertThat(claim("alpha-new", "owner-b")).isInstanceOf(ClaimResult.InProgress.class);
    }

    @Test
    void claimAll_ofManyKeys_claimsEveryOne() {
        List<ClaimRequest> batch = new ArrayList<>();
        for (int i = 0; i < 500; i++) {
            batch.add(claimOf(key("batch-" + i), "owner-a"));
        }
        Collections.shuffle(batch, new Random(7));

        assertThat(store.claimAll(batch)).hasSize(500).allMatch(r -> r instanceof ClaimResult.Claimed);
        assertThat(store.claimAll(batch)).allMatch(r -> r instanceof ClaimResult.Claimed, "same owner retries");
    }

    @Test
    void claimAll_withTheSameKeyTwice_isRefused() {
        assertThatThrownBy(() -> store.claimAll(List.of(claimOf(key("a"), "o1"), claimOf(key("a"), "o1"))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("twice");
    }

    @Test
    void oddKeys_roundTrip_andNeverCollide() {
        String longKey = "x".repeat(IdempotencyKey.MAX_KEY_LENGTH);
        String longKey2 = "x".repeat(IdempotencyKey.MAX_KEY_LENGTH - 1) + "y";
        List<String> keys = List.of(
                "1",
                "订单-10086:支付",
                "emoji-\uD83D\uDCB8",
                "with space and 'quote' and \"dq\" and ; -- and %_",
                longKey,
                longKey2,
                "sha256:" + "0".repeat(64),
                "é".repeat(64),
                "é".repeat(65),
                "caf\u00e9",
                "cafe\u0301",
                "Order-1",
                "order-1",
                "trailing",
                "trailing ");
        for (String k : keys) {
            assertThat(claim(k, "owner-a")).as(k).isInstanceOf(ClaimResult.Claimed.class);
            assertThat(store.complete(key(k), "owner-a", bytes(k.substring(0, 1)), RETENTION))
                    .isEqualTo(UpdateResult.APPLIED);
        }
        for (String k : keys) {
            assertThat(claim(k, "owner-b"))
                    .as(k)
                    .isInstanceOfSatisfying(
                            ClaimResult.Done.class, d -> assertThat(d.result()).isEqualTo(bytes(k.substring(0, 1))));
        }
    }

    @Test
    void unavailableStore_throwsStoreUnavailableException() {
        try (IdempotencyStore broken = createUnavailableStore(clock)) {
            assertThatThrownBy(() -> broken.claim(claimOf(key("k"), "owner-a")))
                    .isInstanceOf(StoreUnavailableException.class);
            assertThatThrownBy(() -> broken.complete(key("k"), "owner-a", null, RETENTION))
                    .isInstanceOf(StoreUnavailableException.class);
            assertThatThrownBy(() -> broken.release(key("k"), "owner-a")).isInstanceOf(StoreUnavailableException.class);
            assertThatThrownBy(() -> broken.lookup(key("k"))).isInstanceOf(StoreUnavailableException.class);
        }
    }

    @Test
    void guard_handlerFailure_releasesTheClaim_andTheRedeliveryRuns() {
        try (Guard guard = guard()) {
            AtomicInteger effects = new AtomicInteger();

            Outcome failed = guard.run("pay-1", () -> {
                throw new IllegalStateException("payment gateway timed out");
            });
            Outcome redelivered = guard.run("pay-1", effects::incrementAndGet);
            Outcome duplicate = guard.run("pay-1", effects::incrementAndGet);

            assertThat(failed.type()).isEqualTo(Outcome.Type.FAILED);
            assertThat(failed.reason()).contains("payment gateway timed out");
            assertThat(redelivered.type()).isEqualTo(Outcome.Type.PROCESSED);
            assertThat(duplicate.type()).isEqualTo(Outcome.Type.DUPLICATE);
            assertThat(effects).hasValue(1);
        }
    }

    /** An {@link Error} is a crash: the claim stays until its lease ends, and the redelivery then takes it over. */
    @Test
    void guard_handlerCrashingWithAnError_keepsTheClaim_andTheRedeliveryTakesOverAfterTheLease() {
        try (Guard guard = guard(timedLease())) {
            AtomicInteger charges = new AtomicInteger();

            assertThatThrownBy(() -> guard.run("pay-1", () -> {
                        charges.incrementAndGet();
                        throw new StackOverflowError("simulated crash after the charge");
                    }))
                    .isInstanceOf(StackOverflowError.class);
            Outcome whileLeased = guard.run("pay-1", charges::incrementAndGet);
            advance(timedLease().plus(margin()));
            List<Boolean> tookOver = new CopyOnWriteArrayList<>();
            Outcome afterLease = guard.handle(Delivery.of("pay-1"), ctx -> {
                tookOver.add(ctx.tookOver());
                return Outcome.processed();
            });

            assertThat(whileLeased.type()).isEqualTo(Outcome.Type.IN_PROGRESS);
            assertThat(afterLease.type()).isEqualTo(Outcome.Type.PROCESSED);
            assertThat(tookOver).as("taken over, never a fresh claim").containsExactly(true);
            assertThat(charges).hasValue(1);
        }
    }

    /**
     * A handler that keeps its thread's interrupt (the usual answer to an {@link InterruptedException} it caught)
     * must still have its effect recorded, and a handler that throws one must still have its claim released: the
     * store calls run on that interrupted thread, and the interrupt stays for the caller.
     */
    @Test
    void guard_handlerLeavingItsThreadInterrupted_isCompleted_orReleased_andTheInterruptIsKept() {
        try (Guard guard = guard()) {
            Outcome kept = guard.run("pay-1", () -> Thread.currentThread().interrupt());
            boolean keptInterrupt = Thread.interrupted();
            Outcome thrown = guard.handle(Delivery.of("pay-2"), ctx -> {
                throw new InterruptedException("consumer shutting down");
            });
            boolean thrownInterrupt = Thread.interrupted();

            assertThat(kept.type()).isEqualTo(Outcome.Type.PROCESSED);
            assertThat(kept.reason()).doesNotContain("not recorded");
            assertThat(keptInterrupt).as("interrupt kept for the caller").isTrue();
            assertThat(store.lookup(key("pay-1")).orElseThrow().state()).isEqualTo(StoredRecord.State.DONE);
            assertThat(thrown.type()).isEqualTo(Outcome.Type.FAILED);
            assertThat(thrownInterrupt).as("interrupt restored for the caller").isTrue();
            assertThat(store.lookup(key("pay-2")))
                    .as("released for the redelivery")
                    .isEmpty();
        }
    }

    @Test
    void guard_sameKeyWithOtherPayload_isRejected() {
        try (Guard guard = guard()) {
            guard.handle(Delivery.of("pay-1", "fingerprint-a"), ctx -> Outcome.processed());

            Outcome reused = guard.handle(Delivery.of("pay-1", "fingerprint-b"), ctx -> Outcome.processed());

            assertThat(reused.type()).isEqualTo(Outcome.Type.REJECTED);
            assertThat(reused.reason()).contains("different payload");
        }
    }

    @Test
    void completeAll_completesEachClaim_andAnswersInRequestOrder() {
        claim("b", "owner-b");
        claim("a", "owner-a");

        List<UpdateResult> results = store.completeAll(List.of(
                Completion.of(key("b"), "owner-b", bytes("rb"), RETENTION),
                Completion.of(key("a"), "owner-a", null, RETENTION),
                Completion.of(key("a-never-claimed"), "owner-a", null, RETENTION)));

        assertThat(results).containsExactly(UpdateResult.APPLIED, UpdateResult.APPLIED, UpdateResult.NOT_FOUND);
        assertThat(claim("b", "owner-c"))
                .isInstanceOfSatisfying(
                        ClaimResult.Done.class, d -> assertThat(d.result()).isEqualTo(bytes("rb")));
        assertThat(claim("a", "owner-c")).isInstanceOf(ClaimResult.Done.class);
    }

    @Test
    void guard_keyWithUnpairedSurrogate_isRejected_andNeverTakenForAnotherKey() {
        try (Guard guard = guard()) {
            AtomicInteger effects = new AtomicInteger();
            assertThat(guard.run("order-?", effects::incrementAndGet).type()).isEqualTo(Outcome.Type.PROCESSED);

            Outcome lone = guard.run("order-\uD800", effects::incrementAndGet);
            Outcome reversed = guard.run("order-\uDC00\uD800", effects::incrementAndGet);

            assertThat(lone.type()).isEqualTo(Outcome.Type.REJECTED);
            assertThat(lone.reason()).contains("unpaired UTF-16 surrogate at index 6");
            assertThat(reversed.type()).isEqualTo(Outcome.Type.REJECTED);
            assertThat(effects).hasValue(1);
        }
    }

    @Test
    void guard_fingerprintOverTheBound_isRejected_withTheReason_andNothingIsStored() {
        try (Guard guard = guard()) {
            String tooLong = "f".repeat(Fingerprint.MAX_LENGTH + 1);

            Outcome outcome = guard.handle(Delivery.of("pay-1", tooLong), ctx -> Outcome.processed());
            Outcome control = guard.handle(Delivery.of("pay-2", "fp\u00e9"), ctx -> Outcome.processed());

            assertThat(outcome.type()).isEqualTo(Outcome.Type.REJECTED);
            assertThat(outcome.reason()).contains("fingerprint is 129 characters long", "Fingerprint.of(payload)");
            assertThat(control.type()).isEqualTo(Outcome.Type.REJECTED);
            assertThat(control.reason()).contains("not printable ASCII");
            assertThat(store.lookup(key("pay-1"))).isEmpty();
            assertThat(guard.handle(Delivery.of("pay-1", Fingerprint.of("payload")), ctx -> Outcome.processed())
                            .type())
                    .isEqualTo(Outcome.Type.PROCESSED);
        }
    }

    /**
     * One fingerprint rule for every store (the core's, {@link Fingerprint#problem}): a claim asked for directly
     * through the SPI with a fingerprint the guard would refuse never reaches any store (the JDBC store kept a 255
     * limit of its own and took 200 characters; another store took any length).
     */
    @Test
    void claimRequest_withAFingerprintTheCoreRefuses_isRefusedBeforeAnyStore() {
        ClaimRequest request = claimOf(key("pay-1"), "owner-a");

        assertThatThrownBy(() -> store.claim(request.withFingerprint("f".repeat(200))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("fingerprint is 200 characters long; it must be 1 to 128");
        assertThatThrownBy(() -> store.claimAll(List.of(request.withFingerprint("with space"))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not printable ASCII");
        assertThat(store.lookup(key("pay-1"))).isEmpty();
        assertThat(store.claim(request.withFingerprint("f".repeat(Fingerprint.MAX_LENGTH))))
                .isInstanceOf(ClaimResult.Claimed.class);
    }

    @Test
    void guard_handleAll_runsEachNewDeliveryInInputOrder_once_andRemembersThem() {
        try (Guard guard = guard()) {
            guard.run("done-before", () -> {});
            List<Integer> ran = new CopyOnWriteArrayList<>();

            List<Outcome> outcomes = guard.handleAll(
                    List.of(
                            Delivery.of("new-z"),
                            Delivery.of("done-before"),
                            Delivery.of(" "),
                            Delivery.of("new-a"),
                            Delivery.of("new-z"),
                            Delivery.of("fails")),
                    ctx -> {
                        ran.add(ctx.index());
                        if (ctx.delivery().key().equals("fails")) {
                            throw new IllegalStateException("gateway down");
                        }
                        return Outcome.processed();
                    });

            assertThat(outcomes)
                    .extracting(Outcome::type)
                    .containsExactly(
                            Outcome.Type.PROCESSED,
                            Outcome.Type.DUPLICATE,
                            Outcome.Type.REJECTED,
                            Outcome.Type.PROCESSED,
                            Outcome.Type.DUPLICATE,
                            Outcome.Type.FAILED);
            assertThat(ran).containsExactly(0, 3, 5);
            assertThat(store.lookup(key("new-z")).orElseThrow().state()).isEqualTo(StoredRecord.State.DONE);
            assertThat(store.lookup(key("new-a")).orElseThrow().state()).isEqualTo(StoredRecord.State.DONE);
            assertThat(store.lookup(key("fails")))
                    .as("released for the redelivery")
                    .isEmpty();
        }
    }

    /**
     * Many threads deliver each of N keys several times at once, and handlers fail at random: every key's effect
     * runs exactly once and none is lost.
     */
    @Test
    @Timeout(120)
    void stress_manyThreadsRedeliveringWithRandomFailures_eachEffectExactlyOnce() throws Exception {
        int keys = stressKeys();
        int copies = 4;
        List<String> deliveries = new ArrayList<>();
        for (int k = 0; k < keys; k++) {
            for (int c = 0; c < copies; c++) {
                deliveries.add("stress-" + k);
            }
        }
        Collections.shuffle(deliveries, new Random(42));
        ConcurrentHashMap<String, AtomicInteger> effects = new ConcurrentHashMap<>();
        AtomicInteger next = new AtomicInteger();
        int threads = 8;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try (Guard guard = guard()) {
            List<Future<?>> workers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                workers.add(pool.submit(() -> {
                    for (int i = next.getAndIncrement(); i < deliveries.size(); i = next.getAndIncrement()) {
                        String k = deliveries.get(i);
                        Outcome outcome;
                        do {
                            outcome = guard.run(k, () -> {
                                if (ThreadLocalRandom.current().nextInt(10) == 0) {
                                    throw new IllegalStateException("random handler failure");
                                }
                                effects.computeIfAbsent(k, x -> new AtomicInteger())
                                        .incrementAndGet();
                            });
                        } while (!outcome.isFinal());
                    }
                    return null;
                }));
            }
            for (Future<?> w : workers) {
                w.get(110, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(effects).hasSize(keys);
        assertThat(effects.values()).allSatisfy(n -> assertThat(n).hasValue(1));
    }

    /**
     * Replays a random sequence of deliveries, duplicates, concurrent deliveries, handler failures, crashes (a claim
     * never completed nor released) and clock jumps past the lease, and checks after every step that no key's effect
     * ran twice; at the end, after the leases lapse, one more delivery of every key leaves each effect applied
     * exactly once: nothing is lost. For a store on its own time the sequences are at most 6 steps long and each
     * lapse sleeps; such a store overrides this with fewer tries (a {@code @Property(tries = 8)} calling super).
     */
    @Property(tries = 1000)
    protected void randomDeliverySequences_keepEveryEffectExactlyOnce(@ForAll("deliverySequences") List<Step> steps) {
        IdempotencyStore s = propertyStore();
        MutableClock time = propertyClock;
        String ns = "p" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
        Map<String, Integer> effects = new HashMap<>();
        try (Guard guard = Guard.builder(s)
                .namespace(ns)
                .lease(timedLease())
                .retention(RETENTION)
                .watchdog(false)
                .build()) {
            for (Step step : steps) {
                String k = "k" + step.key();
                switch (step.kind()) {
                    case DELIVER -> guard.run(k, () -> effects.merge(k, 1, Integer::sum));
                    case FAIL ->
                        guard.run(k, () -> {
                            throw new IllegalStateException("handler failure");
                        });
                    case CONCURRENT ->
                        guard.run(k, () -> {
                            Outcome second = guard.run(k, () -> effects.merge(k, 1, Integer::sum));
                            assertThat(second.type())
                                    .as("a delivery concurrent with a running one")
                                    .isEqualTo(Outcome.Type.IN_PROGRESS);
                            effects.merge(k, 1, Integer::sum);
                        });
                    case CRASH -> s.claim(ClaimRequest.of(IdempotencyKey.of(ns, k), "crashed", timedLease()));
                    case LEASE_LAPSES -> pass(time, timedLease().plus(margin()));
                }
                assertThat(effects.values()).as("after %s", step).allMatch(n -> n == 1);
            }
            if (steps.stream().anyMatch(step -> step.kind() == Step.Kind.CRASH)) {
                pass(time, timedLease().plus(margin())); // the crashed claims lapse
            }
            for (Step step : steps) {
                String k = "k" + step.key();
                Outcome last = guard.run(k, () -> effects.merge(k, 1, Integer::sum));
                assertThat(last.isFinal())
                        .as("final delivery of %s: %s", k, last)
                        .isTrue();
            }
            for (Step step : steps) {
                assertThat(effects.get("k" + step.key()))
                        .as("effects of k%d", step.key())
                        .isEqualTo(1);
            }
        }
    }

    /** One step of a delivery sequence. */
    public record Step(Kind kind, int key) {
        public enum Kind {
            DELIVER,
            FAIL,
            CONCURRENT,
            CRASH,
            LEASE_LAPSES
        }
    }

    @Provide
    Arbitrary<List<Step>> deliverySequences() {
        Arbitrary<Step> step = Combinators.combine(
                        Arbitraries.of(Step.Kind.class), Arbitraries.integers().between(0, 3))
                .as(Step::new);
        return step.list().ofMinSize(1).ofMaxSize(keepsItsOwnTime() ? 6 : 30);
    }

    private final MutableClock propertyClock = MutableClock.atNow();
    private @Nullable IdempotencyStore propertyStore;

    private IdempotencyStore propertyStore() {
        IdempotencyStore store = propertyStore;
        if (store == null) {
            store = createStore(propertyClock);
            propertyStore = store;
        }
        return store;
    }

    @AfterProperty
    void closePropertyStore() {
        IdempotencyStore store = propertyStore;
        if (store != null) {
            store.close();
            propertyStore = null;
        }
    }

    /** How many keys the stress test uses; a slow store may lower it. */
    protected int stressKeys() {
        return 500;
    }

    protected Guard guard() {
        return guard(LEASE);
    }

    private Guard guard(Duration lease) {
        return Guard.builder(store)
                .namespace(namespace)
                .lease(lease)
                .retention(RETENTION)
                .watchdog(false)
                .build();
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
