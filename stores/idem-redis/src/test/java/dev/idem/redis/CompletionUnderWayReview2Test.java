package dev.idem.redis;

import static dev.idem.redis.RedisAdmin.sleep;
import static dev.idem.redis.RedisAdmin.takeOver;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Delivery;
import dev.idem.Guard;
import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyKey;
import dev.idem.Outcome;
import dev.idem.spi.ClaimRequest;
import dev.idem.testsupport.ChildJvm;
import dev.idem.testsupport.PrivateServer;
import dev.idem.testsupport.TestServers;
import io.lettuce.core.RedisClient;
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
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Second review of the completion sent without waiting (2b675dc with the fixes 480ffba, e1629ba). Each test is named
 * after a defect and says its interleaving. The server is the test's own (it is paused, its scripts flushed), never
 * the shared one.
 */
@Timeout(90)
class CompletionUnderWayReview2Test {
    private static PrivateServer redis;

    private final String prefix = TestServers.uniquePrefix("UnderWayReview2");
    private final RedisAdmin admin = new RedisAdmin(redis.url());
    private final RedisCommands<String, String> server = admin.commands;
    private final List<AutoCloseable> closing = new ArrayList<>();

    @TempDir
    Path tmp;

    @BeforeAll
    static void startRedis() {
        redis = PrivateServer.redis();
    }

    @AfterAll
    static void stopRedis() {
        if (redis != null) {
            redis.close();
        }
    }

    @AfterEach
    void closeAll() throws Exception {
        admin.unpause();
        for (int i = closing.size() - 1; i >= 0; i--) {
            closing.get(i).close();
        }
        admin.close();
    }

    // ------------------------------------------------------------------------------------- late reports (fix 1)

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
        Guard guardA = Guard.builder(storeA)
                .namespace("payments")
                .lease(Duration.ofMillis(500))
                .watchdog(false)
                .listener(event -> {
                    if (event.type() == IdempotencyEvent.Type.LEASE_LOST) {
                        aInListener.countDown();
                        try {
                            releaseA.await(30, TimeUnit.SECONDS);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    }
                })
                .build();
        RecordingListener listenerB = new RecordingListener();
        RedisStore storeB = store(Duration.ofSeconds(5));
        Guard guardB = Guard.builder(storeB)
                .namespace("orders")
                .lease(Duration.ofMillis(500))
                .watchdog(false)
                .listener(listenerB)
                .build();
        RedisStore other = store(Duration.ofSeconds(5));
        guardA.run("warm-up", () -> {});
        guardB.run("warm-up", () -> {});
        try {
            IdempotencyKey a = IdempotencyKey.of("payments", "pay-1");
            assertThat(guardA.run(a.key(), () -> {
                                takeOver(other, a);
                                admin.pause(300, "WRITE");
                            })
                            .type())
                    .isEqualTo(Outcome.Type.PROCESSED);
            assertThat(aInListener.await(20, TimeUnit.SECONDS))
                    .as("A's late LEASE_LOST reached A's listener")
                    .isTrue();

            IdempotencyKey b = IdempotencyKey.of("orders", "order-1");
            assertThat(guardB.run(b.key(), () -> {
                                takeOver(other, b);
                                admin.pause(300, "WRITE");
                            })
                            .type())
                    .isEqualTo(Outcome.Type.PROCESSED);
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
            RedisStore store = RedisStore.builder(url)
                    .prefix(prefix)
                    .commandTimeout(Duration.ofSeconds(10))
                    .armingDelay(Duration.ZERO)
                    .build();
            RedisStore other = RedisStore.builder(url)
                    .prefix(prefix)
                    .commandTimeout(Duration.ofSeconds(10))
                    .armingDelay(Duration.ZERO)
                    .build();
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

    // ------------------------------------------------------------------------------- claim after NOSCRIPT (fix 3)

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
}
