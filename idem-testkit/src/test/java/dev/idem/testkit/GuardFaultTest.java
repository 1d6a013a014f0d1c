package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.ConfigurationException;
import dev.idem.Delivery;
import dev.idem.Guard;
import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyKey;
import dev.idem.IdempotencyListener;
import dev.idem.InMemoryStore;
import dev.idem.Outcome;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.IdempotencyStore;
import dev.idem.spi.StoredRecord;
import dev.idem.testkit.ThrowingStore.Op;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The guard under faults: crashes, stores that throw anything, a closed guard, many guards. */
class GuardFaultTest {
    private static final Duration LEASE = Duration.ofSeconds(30);

    private final MutableClock clock = MutableClock.atNow();
    private final InMemoryStore store = InMemoryStore.builder().clock(clock).build();
    private final List<IdempotencyEvent> events = new CopyOnWriteArrayList<>();

    @AfterEach
    void close() {
        store.close();
    }

    private Guard guard(IdempotencyStore s) {
        return Guard.builder(s)
                .namespace("payments")
                .lease(LEASE)
                .listener(events::add)
                .watchdog(false)
                .build();
    }

    private List<IdempotencyEvent.Type> warnings() {
        return events.stream()
                .filter(IdempotencyEvent::isWarning)
                .map(IdempotencyEvent::type)
                .toList();
    }

    /** What a crash looks like to the guard: an {@link Error}, not an exception. */
    private static final class SimulatedCrash extends Error {
        SimulatedCrash() {
            super("simulated crash after the charge");
        }
    }

    @Test
    void handlerCrashingWithAnError_keepsTheClaim_andTheRedeliveryTakesOverOnlyAfterTheLease() {
        Guard g = guard(store);
        AtomicInteger charges = new AtomicInteger();

        assertThatThrownBy(() -> g.run("pay-1", () -> {
                    charges.incrementAndGet();
                    throw new SimulatedCrash();
                }))
                .isInstanceOf(SimulatedCrash.class);
        Outcome whileLeased = g.run("pay-1", charges::incrementAndGet);
        clock.advance(LEASE.plusSeconds(1));
        AtomicBoolean tookOver = new AtomicBoolean();
        Outcome afterLease = g.handle(Delivery.of("pay-1"), ctx -> {
            tookOver.set(ctx.tookOver());
            return Outcome.processed();
        });

        assertThat(whileLeased.type()).isEqualTo(Outcome.Type.IN_PROGRESS);
        assertThat(afterLease.type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(tookOver)
                .as("the redelivery knows a crashed handling may have run part of it")
                .isTrue();
        assertThat(charges).hasValue(1);
    }

    @Test
    void handlerCrashingWithAnError_inABatch_keepsItsClaim_andRecordsTheHandlingsThatFinishedBeforeIt() {
        Guard g = guard(store);

        assertThatThrownBy(() -> g.handleAll(List.of(Delivery.of("a"), Delivery.of("b"), Delivery.of("c")), ctx -> {
                    if (ctx.index() == 1) {
                        throw new SimulatedCrash();
                    }
                    return Outcome.processed();
                }))
                .isInstanceOf(SimulatedCrash.class);

        assertThat(store.lookup(IdempotencyKey.of("payments", "a"))
                        .orElseThrow()
                        .state())
                .as("applied before the crash: its completion is recorded")
                .isEqualTo(StoredRecord.State.DONE);
        assertThat(store.lookup(IdempotencyKey.of("payments", "b"))
                        .orElseThrow()
                        .state())
                .as("crashed: claim kept until its lease ends")
                .isEqualTo(StoredRecord.State.PROCESSING);
        assertThat(store.lookup(IdempotencyKey.of("payments", "c"))
                        .orElseThrow()
                        .state())
                .as("never ran: claim kept until its lease ends, as after any crash")
                .isEqualTo(StoredRecord.State.PROCESSING);
    }

    @ParameterizedTest
    @EnumSource(
            value = Op.class,
            names = {"CLAIM", "CLAIM_ALL"})
    void storeThrowingOnClaim_neverEscapes_andNothingRuns(Op op) {
        Guard g = guard(ThrowingStore.failing(store, op, new IllegalStateException("driver bug")));
        AtomicInteger runs = new AtomicInteger();

        Outcome single = g.run("pay-1", runs::incrementAndGet);
        List<Outcome> batch = g.handleAll(List.of(Delivery.of("pay-2")), ctx -> {
            runs.incrementAndGet();
            return Outcome.processed();
        });

        Outcome refused = op == Op.CLAIM ? single : batch.get(0);
        assertThat(refused.type()).isEqualTo(Outcome.Type.IN_PROGRESS);
        assertThat(refused.reason()).contains("IllegalStateException", "driver bug");
        assertThat(runs).as("the other path worked on the store").hasValue(1);
        assertThat(warnings()).containsExactly(IdempotencyEvent.Type.STORE_UNAVAILABLE);
    }

    @ParameterizedTest
    @EnumSource(
            value = Op.class,
            names = {"COMPLETE", "COMPLETE_ALL"})
    void storeThrowingOnCompletion_neverEscapes_andTheEffectIsProcessedButWarned(Op op) {
        Guard g = guard(ThrowingStore.failing(store, op, new ArithmeticException("long overflow")));

        Outcome outcome = op == Op.COMPLETE
                ? g.run("pay-1", () -> {})
                : g.handleAll(List.of(Delivery.of("pay-1")), ctx -> Outcome.processed())
                        .get(0);

        assertThat(outcome.type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(outcome.reason()).contains("completion was not recorded", "ArithmeticException");
        assertThat(warnings()).containsExactly(IdempotencyEvent.Type.COMPLETION_NOT_RECORDED);
    }

    @Test
    void storeThrowingOnRelease_neverEscapes_andTheHandlerFailureStaysFailed() {
        Guard g = guard(ThrowingStore.failing(store, Op.RELEASE, new IllegalStateException("pool closed")));

        Outcome single = g.run("pay-1", () -> {
            throw new IllegalStateException("gateway down");
        });
        List<Outcome> batch = g.handleAll(List.of(Delivery.of("pay-2")), ctx -> Outcome.outOfOrder("not yet"));

        assertThat(single.type()).isEqualTo(Outcome.Type.FAILED);
        assertThat(single.reason()).contains("gateway down");
        assertThat(batch.get(0).type()).isEqualTo(Outcome.Type.OUT_OF_ORDER);
        assertThat(warnings())
                .containsExactly(IdempotencyEvent.Type.RELEASE_FAILED, IdempotencyEvent.Type.RELEASE_FAILED);
    }

    @Test
    void retentionThatWouldOverflowStoreTime_isRefusedAtBuild_withTheLimit() {
        assertThatThrownBy(() -> Guard.builder(store)
                        .namespace("payments")
                        .retention(ChronoUnit.FOREVER.getDuration())
                        .build())
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("retention")
                .hasMessageContaining("at most");
        assertThatThrownBy(() -> Guard.builder(store)
                        .namespace("payments")
                        .waitForInProgress(ChronoUnit.FOREVER.getDuration())
                        .build())
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("waitForInProgress");
    }

    /**
     * Stores keep whole milliseconds: a lease under 1 ms (from the review of the Redis claim script) was stored as a
     * deadline of now, a claim another consumer could take over at once while the first still ran the handler.
     */
    @Test
    void aLeaseOrRetentionUnderOneMillisecond_isRefusedAtBuild_andInAClaimRequest() {
        Duration half = Duration.ofNanos(500_000);
        assertLeaseRefused(half, "lease must be at least 1 ms");
        assertThatThrownBy(() -> Guard.builder(store).namespace("payments").retention(half))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("retention must be at least 1 ms");
    }

    /**
     * A lease beyond what a Guard accepts (100 years) passed a {@code ClaimRequest} of its own: past 2^53 ms its end no
     * longer fits a Redis script's numbers, and past about 292 million years it overflowed the stores' arithmetic.
     */
    @Test
    void aLeaseOverAHundredYears_isRefusedInAClaimRequest_asAtGuardBuild() {
        Duration hundredYears = Duration.ofDays(36_500);
        Duration tooLong = hundredYears.plusMillis(1);
        assertLeaseRefused(tooLong, "lease must be at most 36500 days");
        assertThat(ClaimRequest.of(IdempotencyKey.of("payments", "p-1"), "owner-a", hundredYears)
                        .lease())
                .isEqualTo(hundredYears);
    }

    /** {@code lease} is refused with {@code message} both by a Guard's builder and by a store's claim request. */
    private void assertLeaseRefused(Duration lease, String message) {
        assertThatThrownBy(() -> Guard.builder(store).namespace("payments").lease(lease))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining(message);
        assertThatThrownBy(() -> ClaimRequest.of(IdempotencyKey.of("payments", "p-1"), "owner-a", lease))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(message);
    }

    @Test
    void watchdog_survivesAnExtendThatThrowsAnythingOnce_keepsExtending_andReportsIt() throws Exception {
        try (InMemoryStore realTime = InMemoryStore.create()) {
            ThrowingStore flaky =
                    ThrowingStore.failingFirst(realTime, Op.EXTEND, new IllegalStateException("driver bug"), 1);
            assertTheWatchdogKeepsExtending(realTime, flaky, events::add);
        }
    }

    /**
     * Review: an {@link Error} on the watchdog's thread (from the store, or from a listener told of a failed
     * extension) cancelled that handler's periodic renewal for good: its lease lapsed under the running handler.
     */
    @Test
    void watchdog_survivesAnErrorFromTheStore_orFromTheListener_keepsExtending() throws Exception {
        try (InMemoryStore realTime = InMemoryStore.create()) {
            ThrowingStore erring =
                    ThrowingStore.erringFirst(realTime, Op.EXTEND, new AssertionError("driver assertion"), 1);
            assertTheWatchdogKeepsExtending(realTime, erring, events::add);
        }
        events.clear();
        try (InMemoryStore realTime = InMemoryStore.create()) {
            ThrowingStore flaky =
                    ThrowingStore.failingFirst(realTime, Op.EXTEND, new IllegalStateException("driver bug"), 1);
            AtomicBoolean thrown = new AtomicBoolean();
            assertTheWatchdogKeepsExtending(realTime, flaky, event -> {
                events.add(event);
                if (event.type() == IdempotencyEvent.Type.STORE_UNAVAILABLE && thrown.compareAndSet(false, true)) {
                    throw new NoClassDefFoundError("io/metrics/Counter (a listener's missing class)");
                }
            });
        }
    }

    /** Runs a handler that waits until its lease was extended past a first failed extension, through {@code flaky}. */
    private void assertTheWatchdogKeepsExtending(
            InMemoryStore realTime, ThrowingStore flaky, IdempotencyListener listener) throws Exception {
        try (Guard g = Guard.builder(flaky)
                .namespace("payments")
                .lease(Duration.ofMillis(300))
                .listener(listener)
                .build()) {
            IdempotencyKey key = IdempotencyKey.of("payments", "pay-1");
            CountDownLatch extended = new CountDownLatch(1);
            CompletableFuture<Outcome> run = CompletableFuture.supplyAsync(() -> g.run("pay-1", () -> {
                Instant firstDeadline = realTime.lookup(key).orElseThrow().expiresAt();
                long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (!realTime.lookup(key).orElseThrow().expiresAt().isAfter(firstDeadline.plusMillis(150))) {
                    if (System.nanoTime() > giveUp) {
                        return;
                    }
                    Thread.onSpinWait();
                }
                extended.countDown();
            }));

            assertThat(run.get(20, TimeUnit.SECONDS).type()).isEqualTo(Outcome.Type.PROCESSED);
            assertThat(extended.getCount())
                    .as("lease extended after the failed extension")
                    .isZero();
            assertThat(flaky.extendCalls.get()).isGreaterThanOrEqualTo(2);
            assertThat(warnings()).contains(IdempotencyEvent.Type.STORE_UNAVAILABLE);
        }
    }

    @Test
    void handleAll_keepsTheClaimOfALaterDeliveryExtended_whileEarlierHandlersRun() throws Exception {
        try (InMemoryStore realTime = InMemoryStore.create()) {
            Guard g = Guard.builder(realTime)
                    .namespace("payments")
                    .lease(Duration.ofMillis(300))
                    .build();
            IdempotencyKey later = IdempotencyKey.of("payments", "b");
            AtomicBoolean extended = new AtomicBoolean();

            List<Outcome> outcomes = g.handleAll(List.of(Delivery.of("a"), Delivery.of("b")), ctx -> {
                if (ctx.index() == 0) {
                    Instant firstDeadline = realTime.lookup(later).orElseThrow().expiresAt();
                    long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                    while (System.nanoTime() < giveUp && !extended.get()) {
                        extended.set(realTime.lookup(later)
                                .orElseThrow()
                                .expiresAt()
                                .isAfter(firstDeadline.plusMillis(150)));
                        Thread.onSpinWait();
                    }
                }
                return Outcome.processed();
            });

            assertThat(extended).as("b's claim extended while a's handler ran").isTrue();
            assertThat(outcomes).extracting(Outcome::type).containsOnly(Outcome.Type.PROCESSED);
            g.close();
        }
    }

    @Test
    void closedGuard_refusesWithoutClaimingOrRunning_andNeverAnswersFailed() {
        Guard g = Guard.builder(store).namespace("payments").build();
        g.close();
        AtomicInteger runs = new AtomicInteger();

        Outcome single = g.run("pay-1", runs::incrementAndGet);
        List<Outcome> batch = g.handleAll(List.of(Delivery.of("pay-2")), ctx -> {
            runs.incrementAndGet();
            return Outcome.processed();
        });

        for (Outcome refused : List.of(single, batch.get(0))) {
            assertThat(refused.type()).isEqualTo(Outcome.Type.IN_PROGRESS);
            assertThat(refused.reason()).contains("guard is closed", "nothing ran");
        }
        assertThat(runs).hasValue(0);
        assertThat(store.lookup(IdempotencyKey.of("payments", "pay-1"))).isEmpty();
    }

    @Test
    void twoHundredGuards_shareOneWatchdogThread() {
        List<Guard> guards = new ArrayList<>();
        try {
            for (int i = 0; i < 200; i++) {
                Guard g = Guard.builder(store).namespace("ns-" + i).build();
                guards.add(g);
                assertThat(g.run("k", () -> {}).type()).isEqualTo(Outcome.Type.PROCESSED);
            }

            long watchdogThreads = Thread.getAllStackTraces().keySet().stream()
                    .filter(t -> t.isAlive() && t.getName().startsWith("idem-lease-watchdog"))
                    .count();
            assertThat(watchdogThreads).isEqualTo(1);
        } finally {
            guards.forEach(Guard::close);
        }
    }
}
