package dev.idem.nats;

import static dev.idem.nats.NatsFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** Workers, shutdown and crashes of {@link IdempotentNatsConsumer}. */
class LifecycleTest extends SharedNatsConnection {
    @Test
    void handlerThrowsError_consumerStops_messageNotAcked_redeliveredAfterAckWait() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "crasherror")) {
            String durable = streams.durable("crash", Duration.ofSeconds(1), -1);
            streams.publish("pay-1", "acc:1");
            IdempotentNatsConsumer crashing = consumer(streams, durable, 1, (key, message) -> {
                throw new OutOfMemoryError("simulated");
            });
            await().atMost(WAIT).until(() -> !crashing.isRunning());
            assertThat(crashing.failure()).containsInstanceOf(OutOfMemoryError.class);

            List<Long> redelivered = new CopyOnWriteArrayList<>();
            try (IdempotentNatsConsumer next = consumer(streams, durable, 1, (key, message) -> {
                redelivered.add(message.metaData().deliveredCount());
                return Outcome.processed();
            })) {
                streams.awaitDone(durable);
            }
            assertThat(redelivered).containsExactly(2L);
            assertThat(streams.deadLetters()).isEmpty();
        }
    }

    @Test
    void closeCalledByAHandler_returnsAtOnce_theMessageIsStillAcked_andTheConsumerStops() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "closeinside")) {
            String durable = streams.durable("closing", Duration.ofSeconds(5), -1);
            AtomicReference<IdempotentNatsConsumer> self = new AtomicReference<>();
            CountDownLatch closed = new CountDownLatch(1);
            streams.publish("pay-3", "acc:1");
            self.set(IdempotentNatsConsumer.builder(nats)
                    .consumer(streams.name, durable)
                    .deadLetterSubject(streams.deadLetterSubject)
                    .shutdownTimeout(WAIT)
                    .handler((key, message) -> {
                        self.get().close();
                        closed.countDown();
                        return Outcome.processed();
                    })
                    .build());
            self.get().start();

            assertThat(closed.await(5, TimeUnit.SECONDS))
                    .as("close() from a handler does not wait for that handler")
                    .isTrue();
            await().atMost(WAIT).until(() -> !self.get().isRunning());
            assertThat(streams.info(durable).getNumAckPending()).isZero();
        }
    }

    @Test
    void fourWorkers_handleMessagesInParallel_neverMoreThanFour_eachOnce() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "workers")) {
            String durable = streams.durable("parallel", Duration.ofSeconds(5), -1);
            for (int i = 0; i < 20; i++) {
                streams.publish("pay-w" + i, "acc:1");
            }
            AtomicInteger inFlight = new AtomicInteger();
            AtomicInteger maxInFlight = new AtomicInteger();
            Set<String> handled = ConcurrentHashMap.newKeySet();
            AtomicInteger calls = new AtomicInteger();
            try (IdempotentNatsConsumer consumer = consumer(streams, durable, 4, (key, message) -> {
                maxInFlight.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
                try {
                    Thread.sleep(50); // the work: long enough for the workers to overlap
                    calls.incrementAndGet();
                    handled.add(key);
                    return Outcome.processed();
                } finally {
                    inFlight.decrementAndGet();
                }
            })) {
                streams.awaitDone(durable);
            }
            assertThat(handled).hasSize(20);
            assertThat(calls).hasValue(20);
            assertThat(maxInFlight.get()).isBetween(2, 4);
        }
    }

    /**
     * {@code close()} interrupts the handlers still running after the shutdown timeout. Before: the handler's failure
     * that the interrupt caused (an {@code InterruptedException}, or a driver's exception around it) was counted
     * toward the message's bound like its own failure: with {@code maxAttempts(1)}, or on a message's last attempt, a
     * shutdown dead-lettered live traffic. Now it is an uncounted wait: the message is handled after the restart.
     */
    @Test
    void handlerInterruptedByClose_isNotCounted_norDeadLettered_andIsHandledAfterwards() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "interrupted")) {
            String durable = streams.durable("stop", Duration.ofSeconds(30), -1);
            streams.publish("pay-1", "acc:1");
            CountDownLatch started = new CountDownLatch(1);
            IdempotentNatsConsumer stopping = IdempotentNatsConsumer.builder(nats)
                    .consumer(streams.name, durable)
                    .deadLetterSubject(streams.deadLetterSubject)
                    .retryPolicy(RetryPolicy.builder().maxAttempts(1).build())
                    .shutdownTimeout(Duration.ofMillis(200))
                    .handler((key, message) -> {
                        started.countDown();
                        try {
                            new CountDownLatch(1).await(); // a long call, e.g. a slow query
                        } catch (InterruptedException e) {
                            throw new IllegalStateException("query interrupted", e); // as a driver reports it
                        }
                        return Outcome.processed();
                    })
                    .build()
                    .start();
            assertThat(started.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
            stopping.close();
            assertThat(stopping.isRunning()).isFalse();

            Set<String> handled = ConcurrentHashMap.newKeySet();
            try (IdempotentNatsConsumer next = consumer(streams, durable, 1, (key, message) -> {
                handled.add(key);
                return Outcome.processed();
            })) {
                await().atMost(WAIT)
                        .until(() -> handled.contains("pay-1")
                                || !streams.deadLetters().isEmpty());
            }
            assertThat(streams.deadLetters()).as("dead-lettered by a shutdown").isEmpty();
            assertThat(handled).containsExactly("pay-1");
        }
    }

    private static IdempotentNatsConsumer consumer(
            NatsFixture.Streams streams, String durable, int workers, MessageHandler handler) throws Exception {
        return streams.consumer(durable)
                .workers(workers)
                .batchSize(10)
                .handler(handler)
                .build()
                .start();
    }
}
