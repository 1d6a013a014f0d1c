package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.idem.ConfigurationException;
import dev.idem.DeadLetterException;
import dev.idem.Delivery;
import dev.idem.Guard;
import dev.idem.Handler;
import dev.idem.HandlingContext;
import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyKey;
import dev.idem.IdempotencyListener;
import dev.idem.InMemoryStore;
import dev.idem.Outcome;
import dev.idem.StoreUnavailableException;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.Completion;
import dev.idem.spi.IdempotencyStore;
import dev.idem.spi.StoredRecord;
import dev.idem.spi.UpdateResult;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class GuardTest {
    private static final Duration LEASE = Duration.ofSeconds(30);

    private final MutableClock clock = MutableClock.atNow();
    private final InMemoryStore store = InMemoryStore.builder().clock(clock).build();
    private final List<IdempotencyEvent> warnings = new CopyOnWriteArrayList<>();
    private final List<Outcome> outcomes = new CopyOnWriteArrayList<>();
    private final IdempotencyListener recorder = event -> {
        if (event.type() == IdempotencyEvent.Type.HANDLED) {
            outcomes.add(Objects.requireNonNull(event.outcome()));
        } else {
            warnings.add(event);
        }
    };

    @AfterEach
    void close() {
        store.close();
    }

    private Guard.Builder guard(IdempotencyStore s) {
        return Guard.builder(s)
                .namespace("payments")
                .lease(LEASE)
                .listener(recorder)
                .watchdog(false);
    }

    private Guard guard() {
        return guard(store).build();
    }

    @Test
    void firstDelivery_isProcessed_andTheDuplicateGetsTheStoredResult() {
        Guard g = guard();

        Outcome first = g.handle(Delivery.of("pay-1"), ctx -> Outcome.processed(bytes("receipt-7")));
        Outcome second = g.handle(Delivery.of("pay-1"), ctx -> Outcome.processed(bytes("never")));

        assertThat(first.type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(second.type()).isEqualTo(Outcome.Type.DUPLICATE);
        assertThat(second.result()).hasValue(bytes("receipt-7"));
        assertThat(outcomes).containsExactly(first, second);
    }

    @Test
    void invalidKey_isRejected_withoutRunningTheHandler() {
        AtomicInteger runs = new AtomicInteger();

        Outcome outcome = guard().run(" ", runs::incrementAndGet);

        assertThat(outcome.type()).isEqualTo(Outcome.Type.REJECTED);
        assertThat(outcome.action()).isEqualTo(Outcome.Action.DEAD_LETTER);
        assertThat(outcome.reason()).contains("missing or blank");
        assertThat(runs).hasValue(0);
    }

    @Test
    void handlerThrowingDeadLetterException_isRejected_andLeavesNoMark() {
        Guard g = guard();

        Outcome rejected = g.run("pay-1", () -> {
            throw new DeadLetterException("amount is negative", null);
        });

        assertThat(rejected.type()).isEqualTo(Outcome.Type.REJECTED);
        assertThat(rejected.reason()).isEqualTo("amount is negative");
        assertThat(store.lookup(IdempotencyKey.of("payments", "pay-1"))).isEmpty();
    }

    @Test
    void outOfOrderFromABusinessGuard_releasesTheClaim_soTheRetryRuns() {
        Guard g = guard();

        Outcome early = g.handle(Delivery.of("ship-1"), ctx -> Outcome.outOfOrder("order not paid yet"));
        Outcome retried = g.handle(Delivery.of("ship-1"), ctx -> Outcome.processed());

        assertThat(early.type()).isEqualTo(Outcome.Type.OUT_OF_ORDER);
        assertThat(retried.type()).isEqualTo(Outcome.Type.PROCESSED);
    }

    @Test
    void duplicateFromABusinessGuard_isRemembered() {
        Guard g = guard();

        g.handle(Delivery.of("pay-1"), ctx -> Outcome.duplicate("order already PAID"));
        Outcome again = g.handle(Delivery.of("pay-1"), ctx -> Outcome.processed());

        assertThat(again.type()).isEqualTo(Outcome.Type.DUPLICATE);
    }

    @Test
    void secondDelivery_whileFirstInProgress_isRetriedLater_noLaterThanTheGuardsLease() {
        Guard g = guard();
        Outcome[] second = new Outcome[1];

        g.run("pay-1", () -> {
            clock.advance(Duration.ofSeconds(10));
            second[0] = g.run("pay-1", () -> {});
        });

        assertThat(second[0].type()).isEqualTo(Outcome.Type.IN_PROGRESS);
        assertThat(second[0].retryAfter()).hasValue(LEASE);
    }

    @Test
    void secondDelivery_waitingForInProgress_answersDuplicate_whenTheFirstCompletes() throws Exception {
        Guard g = guard(store).waitForInProgress(Duration.ofSeconds(30)).build();
        CountDownLatch firstRunning = new CountDownLatch(1);
        CountDownLatch finishFirst = new CountDownLatch(1);
        AtomicInteger effects = new AtomicInteger();

        CompletableFuture<Outcome> first = CompletableFuture.supplyAsync(() -> g.run("pay-1", () -> {
            firstRunning.countDown();
            finishFirst.await();
            effects.incrementAndGet();
        }));
        assertThat(firstRunning.await(10, TimeUnit.SECONDS)).isTrue();
        CompletableFuture<Outcome> second =
                CompletableFuture.supplyAsync(() -> g.run("pay-1", effects::incrementAndGet));
        finishFirst.countDown();

        assertThat(first.get(10, TimeUnit.SECONDS).type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(second.get(10, TimeUnit.SECONDS).type()).isEqualTo(Outcome.Type.DUPLICATE);
        assertThat(effects).hasValue(1);
    }

    @Test
    void secondDelivery_waitingForInProgress_runsTheEffect_whenTheFirstFails() throws Exception {
        Guard g = guard(store).waitForInProgress(Duration.ofSeconds(30)).build();
        CountDownLatch firstRunning = new CountDownLatch(1);
        CountDownLatch failFirst = new CountDownLatch(1);

        CompletableFuture<Outcome> first = CompletableFuture.supplyAsync(() -> g.run("pay-1", () -> {
            firstRunning.countDown();
            failFirst.await();
            throw new IllegalStateException("gateway down");
        }));
        assertThat(firstRunning.await(10, TimeUnit.SECONDS)).isTrue();
        CompletableFuture<Outcome> second = CompletableFuture.supplyAsync(() -> g.run("pay-1", () -> {}));
        failFirst.countDown();

        assertThat(first.get(10, TimeUnit.SECONDS).type()).isEqualTo(Outcome.Type.FAILED);
        assertThat(second.get(10, TimeUnit.SECONDS).type()).isEqualTo(Outcome.Type.PROCESSED);
    }

    @Test
    void storeUnavailable_failsClosed_byDefault_withoutRunningTheHandler() {
        store.close();
        AtomicInteger runs = new AtomicInteger();

        Outcome outcome = guard().run("pay-1", runs::incrementAndGet);

        assertThat(outcome.type()).isEqualTo(Outcome.Type.IN_PROGRESS);
        assertThat(outcome.reason()).contains("unavailable");
        assertThat(runs).hasValue(0);
    }

    @Test
    void storeUnavailable_withFailOpen_runsTheHandler_andWarnsEveryTime() {
        store.close();
        AtomicInteger runs = new AtomicInteger();
        Guard g = guard(store)
                .onStoreUnavailable(Guard.StoreFailurePolicy.FAIL_OPEN)
                .build();

        Outcome first = g.run("pay-1", runs::incrementAndGet);
        Outcome second = g.run("pay-2", runs::incrementAndGet);

        assertThat(first.type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(first.reason()).contains("unguarded");
        assertThat(second.type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(runs).hasValue(2);
        assertThat(warnings)
                .extracting(IdempotencyEvent::type)
                .containsExactly(IdempotencyEvent.Type.FAIL_OPEN, IdempotencyEvent.Type.FAIL_OPEN);
    }

    @Test
    void failingListener_neverChangesTheOutcome() {
        Guard g = Guard.builder(store)
                .namespace("payments")
                .watchdog(false)
                .listener(event -> {
                    throw new IllegalStateException("metrics backend down");
                })
                .build();

        assertThat(g.run("pay-1", () -> {}).type()).isEqualTo(Outcome.Type.PROCESSED);
    }

    @Test
    void handlerOutlivingItsLease_whileAnotherTookOver_isReportedAsLeaseLost() {
        Guard g = guard();
        Guard other = guard();

        Outcome outcome = g.run("pay-1", () -> {
            clock.advance(LEASE.plusSeconds(1));
            assertThat(other.run("pay-1", () -> {}).type()).isEqualTo(Outcome.Type.PROCESSED);
        });

        assertThat(outcome.type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(outcome.reason()).contains("lease ended before completion");
        assertThat(warnings).extracting(IdempotencyEvent::type).containsExactly(IdempotencyEvent.Type.LEASE_LOST);
    }

    @Test
    void completionThatCannotBeRecorded_isStillProcessed_andWarned() {
        Guard g = guard(new FailingCompletions(store)).build();

        Outcome outcome = g.run("pay-1", () -> {});

        assertThat(outcome.type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(outcome.reason()).contains("completion was not recorded");
        assertThat(warnings)
                .extracting(IdempotencyEvent::type)
                .containsExactly(IdempotencyEvent.Type.COMPLETION_NOT_RECORDED);
    }

    @Test
    void aCompletionTheStoreAnswersLater_doesNotHoldTheOutcome_andWhatWentWrongIsWarnedWhenTheAnswerComes() {
        LaterCompletions later = new LaterCompletions(store);
        Guard g = guard(later).build();

        Outcome first = g.run("pay-1", () -> {});
        Outcome second = g.run("pay-2", () -> {});
        Outcome third = g.run("pay-3", () -> {});

        assertThat(List.of(first, second, third))
                .allSatisfy(o -> assertThat(o.type()).isEqualTo(Outcome.Type.PROCESSED))
                .allSatisfy(o -> assertThat(o.reason()).doesNotContain("completion"));
        assertThat(later.sent).hasSize(3);
        assertThat(warnings).isEmpty();

        later.sent.get(0).complete(UpdateResult.APPLIED);
        later.sent.get(1).complete(UpdateResult.NOT_OWNER);
        later.sent.get(2).completeExceptionally(new StoreUnavailableException("later", "connection reset", null));

        await().atMost(Duration.ofSeconds(10)).until(() -> warnings.size() == 2);
        assertThat(warnings)
                .extracting(IdempotencyEvent::type)
                .containsExactly(IdempotencyEvent.Type.LEASE_LOST, IdempotencyEvent.Type.COMPLETION_NOT_RECORDED);
        assertThat(warnings)
                .extracting(IdempotencyEvent::message)
                .satisfiesExactly(
                        m -> assertThat(m).contains("lease ended before completion (NOT_OWNER)"),
                        m -> assertThat(m)
                                .contains("completion was not recorded (later unavailable: connection reset"));
    }

    @Test
    void watchdog_extendsTheLease_whileALongHandlerRuns() throws Exception {
        try (InMemoryStore realTime = InMemoryStore.create();
                Guard g = Guard.builder(realTime)
                        .namespace("payments")
                        .lease(Duration.ofMillis(300))
                        .build()) {
            IdempotencyKey key = IdempotencyKey.of("payments", "pay-1");
            CountDownLatch extended = new CountDownLatch(1);
            CompletableFuture<Outcome> run = CompletableFuture.supplyAsync(() -> g.run("pay-1", () -> {
                Instant firstDeadline = realTime.lookup(key).orElseThrow().expiresAt();
                while (!realTime.lookup(key).orElseThrow().expiresAt().isAfter(firstDeadline.plusMillis(150))) {
                    Thread.onSpinWait();
                }
                extended.countDown();
            }));

            assertThat(extended.await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(run.get(10, TimeUnit.SECONDS).type()).isEqualTo(Outcome.Type.PROCESSED);
        }
    }

    /**
     * The watchdog's sweep stops when no handling runs and starts again with the next one: a long handler after an idle
     * spell (here ten sweeps long) is extended as the first one was.
     */
    @Test
    void watchdog_extendsALongHandler_afterAnIdleSpell_asItDidTheFirst() throws Exception {
        try (InMemoryStore realTime = InMemoryStore.create();
                Guard g = Guard.builder(realTime)
                        .namespace("payments")
                        .lease(Duration.ofMillis(300))
                        .build()) {
            assertThat(runUntilExtended(g, realTime, "pay-1")).isEqualTo(Outcome.Type.PROCESSED);
            for (int i = 0; i < 20; i++) {
                g.run("short-" + i, () -> {});
            }
            Thread.sleep(500);
            assertThat(runUntilExtended(g, realTime, "pay-2")).isEqualTo(Outcome.Type.PROCESSED);
        }
    }

    /**
     * A store that wrote the completion in the handler's transaction pauses the renewals while the transaction holds
     * the claim's row; they go on once it has ended without committing (the work may run again).
     */
    @Test
    void pauseLeaseRenewalWhile_pausesTheRenewalsOfThatClaimOnly_whileItsConditionHolds() throws Exception {
        try (InMemoryStore realTime = InMemoryStore.create();
                Guard g = Guard.builder(realTime)
                        .namespace("payments")
                        .lease(Duration.ofMillis(300))
                        .build()) {
            AtomicBoolean extendedWhilePaused = new AtomicBoolean(true);
            AtomicBoolean extendedAfterThePause = new AtomicBoolean();
            AtomicBoolean otherExtended = new AtomicBoolean();
            CountDownLatch stopped = new CountDownLatch(1);
            CompletableFuture<Outcome> other = CompletableFuture.supplyAsync(() -> g.run("pay-2", () -> {
                stopped.await(10, TimeUnit.SECONDS);
                otherExtended.set(LeaseWaits.extendedWithin(
                        realTime, IdempotencyKey.of("payments", "pay-2"), Duration.ofSeconds(10)));
            }));

            Outcome outcome = g.handle(Delivery.of("pay-1"), ctx -> {
                AtomicBoolean transactionOpen = new AtomicBoolean(true);
                ctx.pauseLeaseRenewalWhile(transactionOpen::get);
                stopped.countDown();
                extendedWhilePaused.set(LeaseWaits.extendedWithin(realTime, ctx.key(), Duration.ofMillis(600)));
                transactionOpen.set(false);
                extendedAfterThePause.set(LeaseWaits.extendedWithin(realTime, ctx.key(), Duration.ofSeconds(10)));
                return Outcome.processed();
            });

            assertThat(outcome.type()).isEqualTo(Outcome.Type.PROCESSED);
            assertThat(extendedWhilePaused).as("pay-1 renewed while paused").isFalse();
            assertThat(extendedAfterThePause)
                    .as("pay-1 renewed after the pause")
                    .isTrue();
            assertThat(other.get(20, TimeUnit.SECONDS).type()).isEqualTo(Outcome.Type.PROCESSED);
            assertThat(otherExtended).as("pay-2 still renewed").isTrue();
        }
    }

    /** Runs a handler that waits (up to 10 s) for the watchdog to extend its lease; answers the outcome's type. */
    private static Outcome.Type runUntilExtended(Guard g, InMemoryStore store, String id) {
        AtomicBoolean extended = new AtomicBoolean();
        Outcome outcome = g.run(
                id,
                () -> extended.set(
                        LeaseWaits.extendedWithin(store, IdempotencyKey.of("payments", id), Duration.ofSeconds(10))));
        assertThat(extended)
                .as("lease of " + id + " extended while its handler ran")
                .isTrue();
        return outcome.type();
    }

    @Test
    void handleAll_claimsInOneRoundTrip_andCompletesInOne() {
        var counting = new CountingStore(store);
        Guard g = guard(counting).build();

        List<Outcome> outcomes =
                g.handleAll(List.of(Delivery.of("a"), Delivery.of("b"), Delivery.of("c")), ctx -> Outcome.processed());

        assertThat(outcomes).extracting(Outcome::type).containsOnly(Outcome.Type.PROCESSED);
        assertThat(counting.claimAlls).hasValue(1);
        assertThat(counting.completeAlls).hasValue(1);
        assertThat(counting.singleCalls).hasValue(0);
    }

    /**
     * A handler whose transaction wrote the completion (a store's in-transaction completion, written here straight
     * into the store) says so on its outcome: the guard reads the claim back instead of completing it again.
     */
    @Test
    void anOutcomeNotedAsCompletedForItsClaim_isNotCompletedAgain_singleAndBatch() {
        var counting = new CountingStore(store);
        Guard g = guard(counting).retention(Duration.ofHours(5)).build();
        List<Duration> retentions = new CopyOnWriteArrayList<>();
        Handler completingInItsTransaction = ctx -> {
            retentions.add(ctx.retention());
            store.complete(ctx.key(), ctx.owner(), null, ctx.retention());
            return Outcome.processed().withCompletionRecorded(ctx);
        };

        Outcome single = g.handle(Delivery.of("pay-1"), completingInItsTransaction);
        List<Outcome> batch = g.handleAll(
                List.of(Delivery.of("pay-2"), Delivery.of("pay-3")),
                ctx -> ctx.index() == 0 ? completingInItsTransaction.handle(ctx) : Outcome.processed());

        assertThat(single.type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(batch).extracting(Outcome::type).containsOnly(Outcome.Type.PROCESSED);
        assertThat(retentions).containsExactly(Duration.ofHours(5), Duration.ofHours(5));
        assertThat(List.of("pay-1", "pay-2", "pay-3"))
                .allSatisfy(id -> assertThat(state(id)).isEqualTo(StoredRecord.State.DONE));
        assertThat(counting.singleCalls)
                .as("the single claim, and no completion")
                .hasValue(1);
        assertThat(counting.completeAlls).as("pay-3's completion only").hasValue(1);
        assertThat(warnings).isEmpty();
    }

    /**
     * Review: a transaction that rolls back at a commit that reports nothing (PostgreSQL after a statement error the
     * handler caught) took the noted completion with it, and the guard answered PROCESSED for an effect never applied.
     * It reads the claim back: still in progress, it is released and the message retried.
     */
    @Test
    void anOutcomeNotedAsCompleted_whoseCompletionDidNotCommit_failsAndReleasesTheClaim() {
        Guard g = guard();

        Outcome outcome =
                g.handle(Delivery.of("pay-1"), ctx -> Outcome.processed().withCompletionRecorded(ctx));

        assertThat(outcome.type()).isEqualTo(Outcome.Type.FAILED);
        assertThat(outcome.reason()).contains("did not commit");
        assertThat(store.lookup(IdempotencyKey.of("payments", "pay-1"))).isEmpty();
        assertThat(warnings)
                .extracting(IdempotencyEvent::type)
                .containsExactly(IdempotencyEvent.Type.COMPLETION_NOT_RECORDED);
    }

    /** A transaction that answers final only once committed (OwnTransaction's) is trusted: no read-back. */
    @Test
    void anOutcomeNotedAsCommittedWithItsCompletion_isTrusted_withoutReadingTheClaimBack() {
        var counting = new CountingStore(store);
        Guard g = guard(counting).build();

        Outcome outcome =
                g.handle(Delivery.of("pay-1"), ctx -> Outcome.processed().withCompletionCommitted(ctx));

        assertThat(outcome.type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(counting.lookups).as("no read-back").hasValue(0);
        assertThat(state("pay-1"))
                .as("the note trusted: no completion of the guard's")
                .isEqualTo(StoredRecord.State.PROCESSING);
    }

    @Test
    void anOutcomeNotedAsCompletedForAnotherClaim_isCompletedByTheGuard() {
        Guard g = guard();
        HandlingContext stranger = HandlingContext.of(
                IdempotencyKey.of("payments", "pay-1"), Delivery.of("pay-1"), 0, "another-owner", 1, false);

        Outcome outcome = g.handle(
                Delivery.of("pay-1"), ctx -> Outcome.processed(bytes("r")).withCompletionRecorded(stranger));

        assertThat(outcome.type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(state("pay-1")).isEqualTo(StoredRecord.State.DONE);
        assertThat(g.handle(Delivery.of("pay-1"), ctx -> Outcome.processed()).result())
                .hasValue(bytes("r"));
    }

    private StoredRecord.State state(String id) {
        return store.lookup(IdempotencyKey.of("payments", id)).orElseThrow().state();
    }

    @Test
    void everyHandling_isOneHandledEvent_namingNamespaceKindAndStore() {
        List<IdempotencyEvent> events = new CopyOnWriteArrayList<>();
        Guard g = Guard.builder(store)
                .namespace("payments")
                .watchdog(false)
                .listener(events::add)
                .build();

        Outcome outcome = g.run("pay-1", () -> {});
        g.run(" ", () -> {});

        assertThat(events).hasSize(2);
        IdempotencyEvent handled = events.get(0);
        assertThat(handled.type()).isEqualTo(IdempotencyEvent.Type.HANDLED);
        assertThat(handled.isWarning()).isFalse();
        assertThat(handled.namespace()).isEqualTo("payments");
        assertThat(handled.guardKind()).isEqualTo(IdempotencyEvent.GuardKind.LEASE);
        assertThat(handled.source()).isEqualTo("in-memory");
        assertThat(handled.outcome()).isEqualTo(outcome);
        assertThat(handled.keyLogId())
                .isEqualTo(IdempotencyKey.of("payments", "pay-1").logId());
        assertThat(events.get(1).keyLogId()).isEqualTo("<invalid>");
        assertThat(events.get(1).outcome().type()).isEqualTo(Outcome.Type.REJECTED);
    }

    @Test
    void builder_withoutNamespace_saysHowToSetIt() {
        assertThatThrownBy(() -> Guard.builder(store).build())
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining(".namespace(");
    }

    @Test
    void builder_withRetentionShorterThanLease_isRefused() {
        assertThatThrownBy(() -> Guard.builder(store)
                        .namespace("p")
                        .lease(Duration.ofMinutes(5))
                        .retention(Duration.ofMinutes(1))
                        .build())
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("retention");
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** Counts round trips: batch calls, and single claims or completions. */
    private static final class CountingStore extends ForwardingStore {
        final AtomicInteger claimAlls = new AtomicInteger();
        final AtomicInteger completeAlls = new AtomicInteger();
        final AtomicInteger singleCalls = new AtomicInteger();
        final AtomicInteger lookups = new AtomicInteger();

        CountingStore(IdempotencyStore delegate) {
            super(delegate);
        }

        @Override
        public java.util.Optional<StoredRecord> lookup(IdempotencyKey key) {
            lookups.incrementAndGet();
            return delegate.lookup(key);
        }

        @Override
        public ClaimResult claim(ClaimRequest request) {
            singleCalls.incrementAndGet();
            return delegate.claim(request);
        }

        @Override
        public List<ClaimResult> claimAll(List<ClaimRequest> requests) {
            claimAlls.incrementAndGet();
            return delegate.claimAll(requests);
        }

        @Override
        public List<UpdateResult> completeAll(List<Completion> completions) {
            completeAlls.incrementAndGet();
            return delegate.completeAll(completions);
        }

        @Override
        public UpdateResult complete(IdempotencyKey key, String owner, byte @Nullable [] result, Duration retention) {
            singleCalls.incrementAndGet();
            return delegate.complete(key, owner, result, retention);
        }
    }

    /** A store that answers completions later, when the test completes them (as a pipelining store does). */
    private static final class LaterCompletions extends ForwardingStore {
        final List<CompletableFuture<UpdateResult>> sent = new CopyOnWriteArrayList<>();

        LaterCompletions(IdempotencyStore delegate) {
            super(delegate);
        }

        @Override
        public CompletionStage<UpdateResult> completeAsync(
                IdempotencyKey key, String owner, byte @Nullable [] result, Duration retention) {
            CompletableFuture<UpdateResult> answer = new CompletableFuture<>();
            sent.add(answer);
            return answer;
        }
    }

    /** A store whose completions fail as if the backend went away after the claim. */
    private static final class FailingCompletions extends ForwardingStore {
        FailingCompletions(IdempotencyStore delegate) {
            super(delegate);
        }

        @Override
        public UpdateResult complete(IdempotencyKey key, String owner, byte @Nullable [] result, Duration retention) {
            throw new StoreUnavailableException(describe(), "connection reset", null);
        }

        @Override
        public String describe() {
            return "failing-completions";
        }
    }
}
