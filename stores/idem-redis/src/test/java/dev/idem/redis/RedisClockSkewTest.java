package dev.idem.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Guard;
import dev.idem.Outcome;
import dev.idem.testsupport.TestServers;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Two consumers whose clocks disagree by 0.8 of the lease, more than the two thirds a watchdog keeps in hand (it
 * renews every third of the lease): the first runs a slow handler with its watchdog on, the second keeps delivering
 * the same key. Real time, short leases.
 */
class RedisClockSkewTest {
    private static final String PREFIX = TestServers.uniquePrefix("RedisClockSkew");
    private static final Duration LEASE = Duration.ofSeconds(3);
    private static final Clock AHEAD =
            Clock.offset(Clock.systemUTC(), LEASE.multipliedBy(8).dividedBy(10));

    @AfterAll
    static void deleteKeys() {
        RedisKeys.deleteAll(TestServers.redis().url(), PREFIX);
    }

    @Test
    @Timeout(60)
    void skewBeyondTwoThirdsOfTheLease_onTheServerClock_neverLetsTheSecondConsumerRunTheKey() throws Exception {
        try (RedisStore first = builder().useServerClock(true).build();
                RedisStore second = builder().useServerClock(true).build()) {
            try (Slow slow = Slow.start(guard(first), "server-clock");
                    Guard secondGuard = guard(second)) {
                AtomicInteger secondRuns = new AtomicInteger();
                Awaitility.await("the second consumer keeps answering IN_PROGRESS for two leases")
                        .during(LEASE.multipliedBy(2))
                        .atMost(LEASE.multipliedBy(3))
                        .pollInterval(Duration.ofMillis(50))
                        .until(() -> secondGuard
                                        .run(slow.key, secondRuns::incrementAndGet)
                                        .type()
                                == Outcome.Type.IN_PROGRESS);

                assertThat(secondRuns).hasValue(0);
                assertThat(slow.finish().type()).isEqualTo(Outcome.Type.PROCESSED);
                // the first consumer's completion is applied just after its outcome: until then the copy is retried
                Awaitility.await("the second consumer finds the key done")
                        .atMost(Duration.ofSeconds(10))
                        .pollInterval(Duration.ofMillis(50))
                        .until(() -> secondGuard
                                        .run(slow.key, secondRuns::incrementAndGet)
                                        .type()
                                == Outcome.Type.DUPLICATE);
                assertThat(secondRuns).hasValue(0);
            }
        }
    }

    /**
     * Issue 22 item 12: with every setting left at its default, a consumer whose JVM clock runs 0.8 of the lease ahead
     * (the builder's default clock, standing for a skewed system clock) must not run the key while the first still
     * runs it.
     */
    @Test
    @Timeout(60)
    void skewBeyondTwoThirdsOfTheLease_withDefaultSettings_neverLetsTheSecondConsumerRunTheKey() throws Exception {
        RedisStore.Builder skewed = builder();
        skewed.clock = AHEAD; // the system clock of a skewed machine: no setting changed
        try (RedisStore first = builder().build();
                RedisStore second = skewed.build()) {
            try (Slow slow = Slow.start(guard(first), "default-settings");
                    Guard secondGuard = guard(second)) {
                AtomicInteger secondRuns = new AtomicInteger();
                Awaitility.await("the second consumer keeps answering IN_PROGRESS for two leases")
                        .during(LEASE.multipliedBy(2))
                        .atMost(LEASE.multipliedBy(3))
                        .pollInterval(Duration.ofMillis(50))
                        .until(() -> secondGuard
                                        .run(slow.key, secondRuns::incrementAndGet)
                                        .type()
                                == Outcome.Type.IN_PROGRESS);

                assertThat(secondRuns).hasValue(0);
                assertThat(slow.finish().type()).isEqualTo(Outcome.Type.PROCESSED);
            }
        }
    }

    /** Why the server clock exists: with each consumer's own clock, the skewed one takes a live lease over. */
    @Test
    @Timeout(60)
    void skewBeyondTwoThirdsOfTheLease_onClientClocks_letsTheSecondConsumerTakeALiveLeaseOver() throws Exception {
        try (RedisStore first = builder().clock(Clock.systemUTC()).build();
                RedisStore second = builder().clock(AHEAD).build()) {
            try (Slow slow = Slow.start(guard(first), "client-clocks");
                    Guard secondGuard = guard(second)) {
                AtomicInteger secondRuns = new AtomicInteger();
                Awaitility.await("the second consumer takes the key over while the first still runs")
                        .atMost(LEASE.multipliedBy(2))
                        .pollInterval(Duration.ofMillis(50))
                        .until(() -> secondGuard
                                        .run(slow.key, secondRuns::incrementAndGet)
                                        .type()
                                == Outcome.Type.PROCESSED);

                assertThat(secondRuns).hasValue(1);
                assertThat(slow.running)
                        .as("the first handler is still running")
                        .hasValue(1);
                slow.finish();
            }
        }
    }

    private static RedisStore.Builder builder() {
        return RedisStore.builder(TestServers.redis().url()).prefix(PREFIX).armingDelay(Duration.ZERO);
    }

    private static Guard guard(RedisStore store) {
        return Guard.builder(store).namespace("skew").lease(LEASE).build();
    }

    /** A handler on its own thread that runs until {@link #finish()}, its guard's watchdog renewing the lease. */
    private static final class Slow implements AutoCloseable {
        final String key;
        final AtomicInteger running = new AtomicInteger();
        private final Guard guard;
        private final CountDownLatch release = new CountDownLatch(1);
        /** Its own thread: the common pool has one worker on two cores, and another test's task can hold it. */
        private final ExecutorService thread = Executors.newSingleThreadExecutor();

        private final CompletableFuture<Outcome> outcome;

        private Slow(Guard guard, String key) throws InterruptedException {
            this.guard = guard;
            this.key = key;
            CountDownLatch started = new CountDownLatch(1);
            this.outcome = CompletableFuture.supplyAsync(
                    () -> guard.run(key, () -> {
                        running.incrementAndGet();
                        started.countDown();
                        release.await(30, TimeUnit.SECONDS);
                        running.decrementAndGet();
                    }),
                    thread);
            assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
        }

        static Slow start(Guard guard, String key) throws InterruptedException {
            return new Slow(guard, key);
        }

        Outcome finish() throws Exception {
            release.countDown();
            return outcome.get(10, TimeUnit.SECONDS);
        }

        @Override
        public void close() {
            release.countDown();
            thread.shutdown();
            guard.close();
        }
    }
}
