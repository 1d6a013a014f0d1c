package dev.idem.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Delivery;
import dev.idem.Guard;
import dev.idem.IdempotencyKey;
import dev.idem.Outcome;
import dev.idem.spi.StoredRecord;
import dev.idem.testsupport.TestServers;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An interrupt that comes while a store call waits for Redis' reply, as a push consumer's shutdown interrupts its
 * consume threads (RocketMQ's {@code DefaultMQPushConsumer.shutdown()} does). The server is the test's own: it is
 * paused ({@code CLIENT PAUSE}) so that the reply comes after the interrupt.
 */
@Timeout(30)
class RedisInterruptTest {
    private static final Duration PAUSE = Duration.ofMillis(800);

    @RegisterExtension
    static final PrivateRedis redis = new PrivateRedis();

    @Test
    void completionSentByAnInterruptedThread_toAPausedServer_isRecorded_andTheInterruptKept() {
        IdempotencyKey key = IdempotencyKey.of("payments", "pay-1");
        try (PausedServer server = new PausedServer("Interrupt")) {
            AtomicBoolean applied = new AtomicBoolean();

            Outcome outcome = server.guard.handle(Delivery.of(key.key()), ctx -> {
                applied.set(true);
                server.pauseAndInterruptThisThread();
                Thread.currentThread().interrupt(); // already, as the completion is sent (it waits for the server)
                return Outcome.processed();
            });
            boolean interrupted = Thread.interrupted();

            assertThat(applied).isTrue();
            assertThat(outcome.type()).isEqualTo(Outcome.Type.PROCESSED);
            assertThat(outcome.reason()).doesNotContain("not recorded");
            assertThat(interrupted).as("the interrupt is kept for the caller").isTrue();
            assertThat(server.store.lookup(key).map(StoredRecord::state)).contains(StoredRecord.State.DONE);
            assertThat(server.guard
                            .handle(Delivery.of(key.key()), ctx -> Outcome.processed())
                            .type())
                    .isEqualTo(Outcome.Type.DUPLICATE);
        }
    }

    @Test
    void claimInterruptedWhileAwaitingTheReply_leavesNoKeyHeld_andKeepsTheInterrupt() {
        IdempotencyKey key = IdempotencyKey.of("payments", "pay-2");
        try (PausedServer server = new PausedServer("InterruptClaim")) {
            // Connected, the namespace armed and the claim script loaded before the pause.
            assertThat(server.guard
                            .handle(Delivery.of("pay-0"), ctx -> Outcome.processed())
                            .type())
                    .isEqualTo(Outcome.Type.PROCESSED);
            server.pauseAndInterruptThisThread(); // the claim waits for the paused server (a consumer shutting down)

            Outcome outcome = server.guard.handle(Delivery.of(key.key()), ctx -> Outcome.processed());
            boolean interrupted = Thread.interrupted();

            assertThat(interrupted).as("the interrupt is kept for the caller").isTrue();
            assertThat(server.store.lookup(key).map(StoredRecord::state))
                    .as("a claim given up on would hold the key until its lease ends (%s)", outcome)
                    .satisfiesAnyOf(
                            state -> assertThat(state).isEmpty(),
                            state -> assertThat(state).contains(StoredRecord.State.DONE));
        }
    }

    /** A store and guard on the private server, and what pauses it and interrupts the test's thread meanwhile. */
    private static final class PausedServer implements AutoCloseable {
        final RedisClient admin = RedisClient.create(redis.url());
        final StatefulRedisConnection<String, String> pauser = admin.connect();
        final ScheduledExecutorService interrupter = Executors.newSingleThreadScheduledExecutor();
        final RedisStore store;
        final Guard guard;

        PausedServer(String testName) {
            store = RedisStore.builder(redis.url())
                    .prefix(TestServers.uniquePrefix(testName))
                    .commandTimeout(Duration.ofSeconds(5))
                    .armingDelay(Duration.ZERO)
                    .build();
            guard = Guard.builder(store)
                    .namespace("payments")
                    .lease(Duration.ofSeconds(10))
                    .build();
        }

        /** Pauses every client of the server and interrupts the calling thread a quarter into the pause. */
        void pauseAndInterruptThisThread() {
            Thread caller = Thread.currentThread();
            pauser.sync().clientPause(PAUSE.toMillis());
            interrupter.schedule(caller::interrupt, PAUSE.toMillis() / 4, TimeUnit.MILLISECONDS);
        }

        @Override
        public void close() {
            interrupter.shutdownNow();
            Thread.interrupted();
            guard.close();
            store.close();
            pauser.close();
            admin.shutdown();
        }
    }
}
