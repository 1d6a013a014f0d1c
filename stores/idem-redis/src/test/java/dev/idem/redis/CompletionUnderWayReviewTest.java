package dev.idem.redis;

import static dev.idem.redis.RedisAdmin.sleep;
import static dev.idem.redis.RedisAdmin.takeOver;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Delivery;
import dev.idem.Guard;
import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyKey;
import dev.idem.IdempotencyListener;
import dev.idem.Outcome;
import dev.idem.spi.ClaimRequest;
import dev.idem.testsupport.ChildJvm;
import dev.idem.testsupport.TestServers;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.sync.RedisCommands;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The two reviews of the completion sent without waiting for its reply (2b675dc; the second on the fixes 480ffba,
 * e1629ba). Each test is named after what a defect broke and says its interleaving; each was red before its fix (the
 * first in its kill -9 form, see its comment). The server is the test's own (it is paused, its scripts flushed).
 */
@Timeout(90)
class CompletionUnderWayReviewTest {
    @RegisterExtension
    static final PrivateRedis redis = new PrivateRedis();

    private final String prefix = TestServers.uniquePrefix("UnderWayReview");
    private final RedisAdmin admin = new RedisAdmin(redis.url());
    private final RedisCommands<String, String> server = admin.commands;
    private final List<AutoCloseable> closing = new ArrayList<>();

    @TempDir
    Path tmp;

    @AfterEach
    void closeAll() throws Exception {
        admin.unpause();
        for (int i = closing.size() - 1; i >= 0; i--) {
            closing.get(i).close();
        }
        admin.close();
    }

    // ------------------------------------------------------------------------------------------------ crash windows

    /**
     * Interleaving: a consumer process claims pay-1, applies the effect, its guard sends COMPLETE and answers
     * PROCESSED at once; the consumer acks (here: prints ACKED) and exits right after the ack with {@code System.exit},
     * without closing the store, while Redis is slow for a moment (CLIENT PAUSE) and has not run the COMPLETE. The
     * store's exit hook waits for the completion under way, so the next copy of the message (a producer's resend) is a
     * DUPLICATE. (Killed with SIGKILL instead, the process leaves the key in progress until its lease ends and the copy
     * runs again: the window between the effect and its completion, which the synchronous completion had too — there
     * the process died unacknowledged and the broker's redelivery ran again after the lease; see docs/redis.md.)
     */
    @Test
    void aConsumerThatExitsRightAfterItsAck_withoutClosingTheStore_stillRecordsTheCompletion() throws Exception {
        String key = "pay-1";
        String effects = "effects:" + prefix + ":" + key;
        ChildJvm child = ChildJvm.start(
                "ACKED", AckThenExit.class, tmp.resolve("child.log"), redis.url(), prefix, key, effects, "3000");
        closing.add(child::kill);
        CountDownLatch exited = new CountDownLatch(1);
        child.onExit(status -> exited.countDown());
        assertThat(child.awaitSignal(Duration.ofSeconds(40)))
                .as("the child acked (see " + tmp.resolve("child.log") + ")")
                .isTrue();
        assertThat(exited.await(30, TimeUnit.SECONDS)).as("the child exited").isTrue();

        assertThat(server.get(effects))
                .as("the effect was applied once by the child")
                .isEqualTo("1");
        String leftInRedis = server.get(RedisAdmin.recordKey(prefix, "payments", key));

        RedisStore store = store(Duration.ofSeconds(10));
        Guard guard = Guard.builder(store)
                .namespace("payments")
                .lease(Duration.ofSeconds(2))
                .build();
        Outcome copy = handleUntilNotInProgress(guard, key, () -> server.incr(effects));

        assertThat(server.get(effects))
                .as("effects applied; the acked message left " + leftInRedis + " in Redis; its copy answered " + copy)
                .isEqualTo("1");
        assertThat(copy.type()).isEqualTo(Outcome.Type.DUPLICATE);
    }

    /** The store of a child consumer process: its own client, no arming delay, a generous command timeout. */
    static RedisStore childStore(String url, String prefix) {
        return RedisStore.builder(url)
                .prefix(prefix)
                .commandTimeout(Duration.ofSeconds(10))
                .armingDelay(Duration.ZERO)
                .build();
    }

    /** The consumer process of the test above: handles one message, acks, and exits without closing anything. */
    public static final class AckThenExit {
        public static void main(String[] args) throws Exception {
            String url = args[0];
            String prefix = args[1];
            String key = args[2];
            String effects = args[3];
            long pauseMillis = Long.parseLong(args[4]);
            RedisClient admin = RedisClient.create(url);
            RedisCommands<String, String> effectsDb = admin.connect().sync();
            RedisStore store = childStore(url, prefix);
            Guard guard = Guard.builder(store)
                    .namespace("payments")
                    .lease(Duration.ofSeconds(2))
                    .build();
            guard.run("warm-up", () -> {}); // scripts loaded, namespace armed
            Outcome outcome = guard.run(key, () -> {
                effectsDb.incr(effects); // the effect
                effectsDb.clientPause(pauseMillis); // Redis is slow for a moment, as the completion is sent
            });
            System.out.println("ACKED " + outcome.type() + " " + outcome.reason()); // the broker ack
            System.out.flush();
            System.exit(0);
        }
    }

    // ------------------------------------------------------------------------------------- failure reporting

    /**
     * Interleaving: the guard's handler runs past its lease and another consumer takes the key over; the handler
     * returns while Redis is slow (CLIENT PAUSE WRITE); the guard answers PROCESSED and later Redis answers the
     * COMPLETE with NOT_OWNER. The guard then reports LEASE_LOST from Lettuce's I/O thread; a listener that reads the
     * store there (to log who holds the key now) waits for a reply only that blocked I/O thread could read, so its
     * read times out (and every other call on the connection stalls meanwhile). With the synchronous completion the
     * warning came on the handling thread and the read answered.
     */
    @Test
    void aLateWarning_reachesTheListenerOffTheClientsIoThread_soItMayReadTheStore() throws Exception {
        IdempotencyKey key = IdempotencyKey.of("payments", "pay-1");
        AtomicReference<RedisStore> storeRef = new AtomicReference<>();
        AtomicReference<Object> read = new AtomicReference<>();
        AtomicReference<String> thread = new AtomicReference<>();
        CountDownLatch told = new CountDownLatch(1);
        RedisStore store = store(Duration.ofSeconds(2));
        storeRef.set(store);
        Guard guard = leaseLosingGuard(store, "payments", event -> {
            if (event.type() == IdempotencyEvent.Type.LEASE_LOST) {
                thread.set(Thread.currentThread().getName());
                try {
                    read.set(storeRef.get().lookup(key));
                } catch (RuntimeException e) {
                    read.set(e);
                }
                told.countDown();
            }
        });
        RedisStore other = store(Duration.ofSeconds(2));
        guard.run("warm-up", () -> {});

        Outcome outcome = runLosingTheLease(guard, other, key, 1_000);

        assertThat(outcome.type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(told.await(20, TimeUnit.SECONDS)).isTrue();
        assertThat(read.get())
                .as("the listener's store read, on thread " + thread.get())
                .isInstanceOf(java.util.Optional.class);
    }

    /**
     * Interleaving: as above, but the listener is slow (an alert sent over HTTP, say: here it waits on a latch) when
     * the late LEASE_LOST comes on Lettuce's I/O thread. Meanwhile another consumer thread handles another key: its
     * claim is sent, Redis answers, but the blocked I/O thread cannot read the answer, so the claim times out and the
     * message is retried (IN_PROGRESS, "store unavailable"). One slow listener call stops every consumer of the store
     * for as long as it lasts; with the synchronous completion it delayed only the thread that handled the key.
     */
    @Test
    void aSlowListenerOnALateWarning_stallsNoOtherConsumerOfTheStore() throws Exception {
        IdempotencyKey key = IdempotencyKey.of("payments", "pay-1");
        CountDownLatch inListener = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        RedisStore store = store(Duration.ofSeconds(2));
        Guard guard = leaseLosingGuard(store, "payments", hangsOnLeaseLost(inListener, release));
        RedisStore other = store(Duration.ofSeconds(2));
        guard.run("warm-up", () -> {});
        assertThat(runLosingTheLease(guard, other, key, 500).type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(inListener.await(20, TimeUnit.SECONDS)).isTrue();

        Outcome unrelated;
        try {
            unrelated = guard.run("pay-2", () -> {});
        } finally {
            release.countDown();
        }

        assertThat(unrelated.type()).as(unrelated.reason()).isEqualTo(Outcome.Type.PROCESSED);
    }

    /**
     * Interleaving: a store on the caller's own RedisClient without command timeouts (async commands never time out,
     * as with {@code TimeoutOptions.create()} and Lettuce 6's defaults) and commandTimeout 500 ms. The guard's
     * COMPLETE is sent while Redis does not answer (paused longer than the command timeout: a stalled master, a
     * black-holed network). complete() gave up after the command timeout and reported the completion as not recorded
     * (the store's promise: every wait longer than the command timeout becomes a StoreUnavailableException);
     * completeAsync's stage (answer() sets no deadline of its own) stays pending for as long as Redis does not answer,
     * so the acked message's missing completion is reported to nobody, and the future stays in underWay.
     */
    @Test
    void aCompletionOnACallersClientWithoutCommandTimeouts_isReportedNotRecorded_afterTheCommandTimeout()
            throws Exception {
        RedisClient callers = RedisClient.create(redis.url());
        // A caller's client configured as Lettuce 6 clients were by default: no command timeouts (Lettuce 7's
        // default, TimeoutOptions.enabled(), times commands out after the connection's timeout)
        callers.setOptions(
                ClientOptions.builder().timeoutOptions(TimeoutOptions.create()).build());
        closing.add(callers::shutdown);
        RedisStore store = RedisStore.builder(callers)
                .prefix(prefix)
                .commandTimeout(Duration.ofMillis(500))
                .armingDelay(Duration.ZERO)
                .build();
        closing.add(store);
        RecordingListener listener = new RecordingListener();
        Guard guard = Guard.builder(store)
                .namespace("payments")
                .lease(Duration.ofSeconds(30))
                .listener(listener)
                .build();
        assertThat(guard.run("warm-up", () -> {}).type()).isEqualTo(Outcome.Type.PROCESSED);

        Outcome outcome = guard.run("pay-1", () -> admin.pause(5_000, "ALL")); // longer than the wait below, and short
        // enough for the UNPAUSE after the test (itself paused)
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
        while (listener.warnings.isEmpty() && System.nanoTime() < deadline) {
            sleep(50);
        }

        assertThat(outcome.type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(listener.warnings)
                .as("warnings 3 s after the guard answered " + outcome + " (command timeout 500 ms)")
                .extracting(IdempotencyEvent::type)
                .contains(IdempotencyEvent.Type.COMPLETION_NOT_RECORDED);
    }

    // ------------------------------------------------------------------------------------------------ ordering

    /**
     * Interleaving: the server lost its scripts (SCRIPT FLUSH, or a restart with persistence), and another consumer's
     * claim has loaded the claim script again, not the completion script. The guard handles pay-1: its COMPLETE goes
     * by SHA and is queued (Redis slow for a moment), the guard answers PROCESSED; a copy of pay-1 comes to the same
     * consumer, whose claim by SHA is queued behind the COMPLETE. Redis answers the COMPLETE with NOSCRIPT and runs
     * the claim, which finds the key PROCESSING: the copy answers IN_PROGRESS ("in progress by another consumer")
     * and is retried; the COMPLETE's source, re-sent from the I/O thread, runs only after. The promise "the key's next
     * claim runs after the completion on the same connection" does not hold across a NOSCRIPT. With the synchronous
     * completion the copy found the key DONE.
     */
    @Test
    void aCompletionThatMeetsNoscript_andIsOvertakenByTheKeysNextClaim_stillAnswersTheCopyDuplicate() {
        RedisStore store = store(Duration.ofSeconds(10));
        Guard guard = Guard.builder(store)
                .namespace("payments")
                .lease(Duration.ofSeconds(30))
                .build();
        assertThat(guard.run("warm-up", () -> {}).type()).isEqualTo(Outcome.Type.PROCESSED);
        server.scriptFlush();
        RedisStore otherConsumer = store(Duration.ofSeconds(10));
        otherConsumer.claim(ClaimRequest.of(IdempotencyKey.of("payments", "pay-x"), "owner-x", Duration.ofSeconds(30)));

        Outcome first = guard.run("pay-1", () -> admin.pause(500, "ALL"));
        Outcome copy = guard.run("pay-1", () -> {});

        assertThat(first.type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(copy.type()).as(copy.reason()).isEqualTo(Outcome.Type.DUPLICATE);
    }

    // ------------------------------------------------------- second review: late reports (fixes 1 and 4)

    /**
     * Interleaving: guard A (namespace payments, its own store) loses its lease while its handler runs (another
     * consumer takes over), the handler returns while Redis is slow, the guard answers PROCESSED, and the late
     * NOT_OWNER becomes a LEASE_LOST report on Guard's static LATE_REPORTS thread. A's listener is slow there (an alert
     * over HTTP to an endpoint that hangs: here a latch). Then guard B — another namespace, another store, another
     * listener, nothing shared with A but the JVM — has the same late LEASE_LOST: its report is queued behind A's
     * listener on the one JVM-wide thread and B's listener hears nothing for as long as A's hangs (the queue is
     * unbounded: every late report of every guard piles up). With the synchronous completion each warning came on
     * the handling thread of its own guard; the first fix moved them off Lettuce's I/O thread but onto one thread
     * shared by every guard of the JVM.
     */
    @Test
    void aHangingListenerOfOneGuard_doesNotSilenceTheLateWarningsOfAnotherGuard() throws Exception {
        CountDownLatch aInListener = new CountDownLatch(1);
        CountDownLatch releaseA = new CountDownLatch(1);
        RedisStore storeA = store(Duration.ofSeconds(5));
        Guard guardA = leaseLosingGuard(storeA, "payments", hangsOnLeaseLost(aInListener, releaseA));
        RecordingListener listenerB = new RecordingListener();
        RedisStore storeB = store(Duration.ofSeconds(5));
        Guard guardB = leaseLosingGuard(storeB, "orders", listenerB);
        RedisStore other = store(Duration.ofSeconds(5));
        guardA.run("warm-up", () -> {});
        guardB.run("warm-up", () -> {});
        try {
            IdempotencyKey a = IdempotencyKey.of("payments", "pay-1");
            assertThat(runLosingTheLease(guardA, other, a, 300).type()).isEqualTo(Outcome.Type.PROCESSED);
            assertThat(aInListener.await(20, TimeUnit.SECONDS))
                    .as("A's late LEASE_LOST reached A's listener")
                    .isTrue();

            IdempotencyKey b = IdempotencyKey.of("orders", "order-1");
            assertThat(runLosingTheLease(guardB, other, b, 300).type()).isEqualTo(Outcome.Type.PROCESSED);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (listenerB.warnings.isEmpty() && System.nanoTime() < deadline) {
                sleep(50);
            }

            assertThat(listenerB.warnings)
                    .as("guard B's warnings 10 s after its late LEASE_LOST, while guard A's listener hangs")
                    .extracting(IdempotencyEvent::type)
                    .contains(IdempotencyEvent.Type.LEASE_LOST);
        } finally {
            releaseA.countDown();
        }
    }

    /**
     * Interleaving: a consumer process loses its lease while its handler runs (another consumer takes the key over),
     * the handler returns while Redis is slow, the guard answers PROCESSED, the consumer acks and calls System.exit
     * without closing the store (the case fix 4 is for). The store's exit hook waits for the COMPLETE's reply
     * (NOT_OWNER), which hands the LEASE_LOST report to Guard's LATE_REPORTS thread — a daemon thread — and returns;
     * the JVM halts with the report queued or half-delivered (the listener here takes 200 ms: an alert sent over HTTP,
     * an appender flushing). The one warning that says "another consumer may also have applied the effect" is lost
     * (in the red run even Guard's own WARNING log line, written on that thread before the listener, never appears in
     * the child's stderr: the delay only makes the loss certain). With the synchronous completion it reached the log
     * and the listener on the handling thread before the ack.
     */
    @Test
    void aLateWarningAtExit_reachesTheListenerBeforeTheJvmHalts() throws Exception {
        assertThat(leaseLostChildHeard(0))
                .as("what the child's listener recorded before the JVM halted")
                .contains("HEARD LEASE_LOST");
    }

    /**
     * Control for the test above (green): the same child, waiting 3 s after its ack before it exits, does report the
     * LEASE_LOST to its listener: the report is lost only to the exit.
     */
    @Test
    void control_aLateWarning_reachesTheListenerWhenTheJvmLivesOn() throws Exception {
        assertThat(leaseLostChildHeard(3_000))
                .as("what the child's listener recorded in the 3 s before it exited")
                .contains("HEARD LEASE_LOST");
    }

    private String leaseLostChildHeard(long lingerMillis) throws Exception {
        Path told = tmp.resolve("told.txt");
        ChildJvm child = ChildJvm.start(
                "ACKED",
                LeaseLostThenExit.class,
                tmp.resolve("child.log"),
                redis.url(),
                prefix,
                "pay-1",
                told.toString(),
                String.valueOf(lingerMillis));
        closing.add(child::kill);
        CountDownLatch exited = new CountDownLatch(1);
        child.onExit(status -> exited.countDown());
        assertThat(child.awaitSignal(Duration.ofSeconds(40)))
                .as("the child acked (see " + tmp.resolve("child.log") + ")")
                .isTrue();
        assertThat(exited.await(30, TimeUnit.SECONDS)).as("the child exited").isTrue();

        String heard = Files.exists(told) ? Files.readString(told) : "";
        return heard + " [child stderr: " + Files.readString(tmp.resolve("child.log")) + "]";
    }

    /** The consumer process of the test above: loses its lease, acks, exits without closing anything. */
    public static final class LeaseLostThenExit {
        public static void main(String[] args) throws Exception {
            String url = args[0];
            String prefix = args[1];
            IdempotencyKey key = IdempotencyKey.of("payments", args[2]);
            Path told = Path.of(args[3]);
            RedisClient admin = RedisClient.create(url);
            RedisCommands<String, String> adminDb = admin.connect().sync();
            RedisStore store = childStore(url, prefix);
            RedisStore other = childStore(url, prefix);
            Guard guard = Guard.builder(store)
                    .namespace("payments")
                    .lease(Duration.ofMillis(500))
                    .watchdog(false)
                    .listener(event -> {
                        if (event.isWarning()) {
                            try {
                                Thread.sleep(200); // an alert sent over HTTP, an appender that flushes
                                Files.writeString(
                                        told,
                                        "HEARD " + event.type() + " " + event.message() + "\n",
                                        StandardCharsets.UTF_8,
                                        StandardOpenOption.CREATE,
                                        StandardOpenOption.APPEND);
                            } catch (Exception e) {
                                throw new IllegalStateException(e);
                            }
                        }
                    })
                    .build();
            guard.run("warm-up", () -> {});
            Outcome outcome = guard.run(key.key(), () -> {
                takeOver(other, key);
                adminDb.clientPause(1_000); // Redis slow for a moment as the completion is sent
            });
            System.out.println("ACKED " + outcome.type() + " " + outcome.reason()); // the broker ack
            System.out.flush();
            Thread.sleep(Long.parseLong(args[4])); // 0: exit right after the ack
            System.exit(0);
        }
    }

    // ---------------------------------------------------- second review: claim after NOSCRIPT (fix 3)

    /**
     * Interleaving: as in CompletionUnderWayReviewTest's NOSCRIPT case (scripts flushed, another consumer reloaded the
     * claim script, not the completion script; Redis slow as pay-1's COMPLETE is sent): the guard answers pay-1
     * PROCESSED, and the copy of pay-1 comes in a batch (Guard.handleAll: a Kafka batch listener, @Idempotent on a
     * List parameter) on the same store. The batch's claimAll, queued behind the COMPLETE, runs before the COMPLETE's
     * re-sent source and finds pay-1 PROCESSING. Fix 3 re-claims only in RedisStore.claim (Guard.handle), not in
     * claimAll, so the copy answers IN_PROGRESS ("in progress by another consumer") instead of DUPLICATE, against
     * docs/redis.md ("a claim of the same key by the same store finds it done").
     */
    @Test
    void aCopyInABatch_afterACompletionOvertakenAtNoscript_answersDuplicate() {
        RedisStore store = store(Duration.ofSeconds(10));
        Guard guard = Guard.builder(store)
                .namespace("payments")
                .lease(Duration.ofSeconds(30))
                .build();
        assertThat(guard.run("warm-up", () -> {}).type()).isEqualTo(Outcome.Type.PROCESSED);
        server.scriptFlush();
        RedisStore otherConsumer = store(Duration.ofSeconds(10));
        otherConsumer.claim(ClaimRequest.of(IdempotencyKey.of("payments", "pay-x"), "owner-x", Duration.ofSeconds(30)));

        Outcome first = guard.run("pay-1", () -> admin.pause(500, "ALL"));
        List<Outcome> copies = guard.handleAll(List.of(Delivery.of("pay-1")), ctx -> Outcome.processed());

        assertThat(first.type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(copies.get(0).type()).as(copies.get(0).reason()).isEqualTo(Outcome.Type.DUPLICATE);
    }

    // ------------------------------------------------------------------------------------------------ helpers

    private RedisStore store(Duration commandTimeout) {
        RedisStore store = RedisStore.builder(redis.url())
                .prefix(prefix)
                .commandTimeout(commandTimeout)
                .armingDelay(Duration.ZERO)
                .build();
        closing.add(store);
        return store;
    }
    /** A guard of a 500 ms lease without the watchdog, telling {@code listener}: its handlers outlive their lease. */
    private static Guard leaseLosingGuard(RedisStore store, String namespace, IdempotencyListener listener) {
        return Guard.builder(store)
                .namespace(namespace)
                .lease(Duration.ofMillis(500))
                .watchdog(false)
                .listener(listener)
                .build();
    }

    /** A listener that, at a LEASE_LOST, counts {@code reached} down and hangs until {@code release} (at most 30 s). */
    private static IdempotencyListener hangsOnLeaseLost(CountDownLatch reached, CountDownLatch release) {
        return event -> {
            if (event.type() == IdempotencyEvent.Type.LEASE_LOST) {
                reached.countDown();
                try {
                    release.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        };
    }

    /**
     * Handles {@code key}, whose lease {@code other} takes over while the handler runs; the handler returns with
     * Redis's writes paused for {@code pauseMillis}, so that the completion (answered NOT_OWNER) comes after the outcome.
     */
    private Outcome runLosingTheLease(Guard guard, RedisStore other, IdempotencyKey key, long pauseMillis) {
        return guard.run(key.key(), () -> {
            takeOver(other, key);
            admin.pause(pauseMillis, "WRITE");
        });
    }

    /** Handles a copy of {@code key}, again while the key is held (IN_PROGRESS), for at most 15 s. */
    private static Outcome handleUntilNotInProgress(Guard guard, String key, Runnable effect) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        while (true) {
            Outcome o = guard.run(key, effect::run);
            if (o.type() != Outcome.Type.IN_PROGRESS || System.nanoTime() > deadline) {
                return o;
            }
            sleep(100);
        }
    }
}
