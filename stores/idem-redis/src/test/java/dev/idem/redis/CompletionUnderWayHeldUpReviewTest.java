package dev.idem.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Guard;
import dev.idem.IdempotencyEvent;
import dev.idem.Outcome;
import dev.idem.testsupport.PrivateServer;
import dev.idem.testsupport.TestServers;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Review of 2b675dc: attacks on the completion sent without waiting that held up (green), kept because nothing else
 * covers them. Each test has a server of its own (it is paused and restarted).
 */
@Timeout(60)
class CompletionUnderWayHeldUpReviewTest {
    private PrivateServer redis;
    private RedisAdmin admin;
    private RedisCommands<String, String> server;
    private final String prefix = TestServers.uniquePrefix("UnderWayHeldUp");

    @BeforeEach
    void start() {
        redis = PrivateServer.redis();
        admin = new RedisAdmin(redis.url());
        server = admin.commands;
    }

    @AfterEach
    void stop() {
        admin.close();
        redis.close();
    }

    /**
     * Interleaving: the guard's COMPLETE is sent and waits at a paused Redis; the guard answers PROCESSED; Redis is
     * restarted without persistence before it runs the COMPLETE (every mark and script lost). Lettuce replays the
     * unanswered COMPLETE on the new connection (or fails it): it finds no record and does not create one, and the
     * late answer is reported once; the next copy of the message finds the namespace's sentinel gone and fails closed
     * (IN_PROGRESS, marks lost) instead of applying the effect again.
     */
    @Test
    void aRestartWithoutPersistenceWhileTheCompletionIsUnderWay_isReportedOnce_andTheCopyFailsClosed()
            throws Exception {
        RecordingListener listener = new RecordingListener();
        ScheduledExecutorService restarter = Executors.newSingleThreadScheduledExecutor();
        AtomicInteger effects = new AtomicInteger();
        try (RedisStore store = RedisStore.builder(redis.url())
                        .prefix(prefix)
                        .commandTimeout(Duration.ofSeconds(5))
                        .armingDelay(Duration.ZERO)
                        .build();
                Guard guard = Guard.builder(store)
                        .namespace("payments")
                        .lease(Duration.ofSeconds(30))
                        .listener(listener)
                        .build()) {
            guard.run("warm-up", () -> {});

            Outcome first = guard.run("pay-1", () -> {
                effects.incrementAndGet();
                admin.pause(3000, "ALL");
                restarter.schedule(redis::restart, 300, TimeUnit.MILLISECONDS);
            });
            assertThat(first.type()).isEqualTo(Outcome.Type.PROCESSED);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (listener.warnings.isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            Thread.sleep(500); // a second report, if any, would come meanwhile

            Outcome copy = guard.run("pay-1", effects::incrementAndGet);

            assertThat(listener.warnings)
                    .filteredOn(w -> w.type() == IdempotencyEvent.Type.LEASE_LOST
                            || w.type() == IdempotencyEvent.Type.COMPLETION_NOT_RECORDED)
                    .as("what the late answer reported: " + listener.warnings)
                    .hasSize(1);
            assertThat(copy.type()).as(copy.reason()).isEqualTo(Outcome.Type.IN_PROGRESS);
            assertThat(copy.reason()).contains("marks lost");
            assertThat(effects).hasValue(1);
        } finally {
            restarter.shutdownNow();
        }
    }

    /**
     * Interleaving: a store on a caller's client without command timeouts; the guard's COMPLETE waits at a Redis that
     * does not answer (paused); the store is closed. close() waits the command timeout, not for ever, closes the
     * connection, and the completion is reported once, as not recorded.
     */
    @Test
    void close_withACompletionRedisDoesNotAnswer_onAClientWithoutTimeouts_returns_andReportsItOnce() throws Exception {
        RecordingListener listener = new RecordingListener();
        RedisClient callers = RedisClient.create(redis.url());
        callers.setOptions(
                ClientOptions.builder().timeoutOptions(TimeoutOptions.create()).build());
        try {
            RedisStore store = RedisStore.builder(callers)
                    .prefix(prefix)
                    .commandTimeout(Duration.ofMillis(500))
                    .armingDelay(Duration.ZERO)
                    .build();
            Guard guard = Guard.builder(store)
                    .namespace("payments")
                    .listener(listener)
                    .build();
            guard.run("warm-up", () -> {});
            assertThat(guard.run("pay-1", () -> admin.pause(8000, "ALL")).type())
                    .isEqualTo(Outcome.Type.PROCESSED);

            long start = System.nanoTime();
            guard.close();
            store.close();
            long closedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);

            assertThat(closedMillis).as("close took").isLessThan(5_000);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
            while (listener.warnings.isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            Thread.sleep(300);
            assertThat(listener.warnings)
                    .extracting(IdempotencyEvent::type)
                    .containsExactly(IdempotencyEvent.Type.COMPLETION_NOT_RECORDED);
        } finally {
            callers.shutdown();
        }
    }
}
