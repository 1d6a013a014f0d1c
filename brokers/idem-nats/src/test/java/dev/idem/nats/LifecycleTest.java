package dev.idem.nats;

import static dev.idem.nats.NatsFixture.FAST_RETRY;
import static dev.idem.nats.NatsFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Outcome;
import io.nats.client.Connection;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Workers, shutdown and crashes of {@link IdempotentNatsConsumer}. */
class LifecycleTest {
    static Connection nats;

    @BeforeAll
    static void setUp() {
        nats = NatsFixture.connect();
    }

    @AfterAll
    static void tearDown() throws InterruptedException {
        nats.close();
    }

    @Test
    void handlerThrowsError_consumerStops_messageNotAcked_redeliveredAfterAckWait() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "crasherror")) {
            String durable = streams.durable("crash", Duration.ofSeconds(1), -1);
            publish(streams, "pay-1");
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
    void close_whileAHandlerWorks_letsItFinish_andAcksIt() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "closefinish")) {
            String durable = streams.durable("closing", Duration.ofSeconds(5), -1);
            CountDownLatch started = new CountDownLatch(1);
            CountDownLatch finish = new CountDownLatch(1);
            AtomicInteger finished = new AtomicInteger();
            publish(streams, "pay-2");
            IdempotentNatsConsumer consumer = consumer(streams, durable, 1, (key, message) -> {
                started.countDown();
                finish.await(WAIT.toSeconds(), TimeUnit.SECONDS);
                finished.incrementAndGet();
                return Outcome.processed();
            });
            assertThat(started.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
            Thread closer = new Thread(consumer::close);
            closer.start();
            await().atMost(WAIT)
                    .until(() -> closer.getState() == Thread.State.WAITING
                            || closer.getState() == Thread.State.TIMED_WAITING);
            finish.countDown();
            closer.join(WAIT.toMillis());

            assertThat(consumer.isRunning()).isFalse();
            assertThat(finished).hasValue(1);
            assertThat(streams.info(durable).getNumAckPending())
                    .as("acked before close returned")
                    .isZero();
            assertThat(streams.info(durable).getNumPending()).isZero();
        }
    }

    @Test
    void closeCalledByAHandler_returnsAtOnce_theMessageIsStillAcked_andTheConsumerStops() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "closeinside")) {
            String durable = streams.durable("closing", Duration.ofSeconds(5), -1);
            AtomicReference<IdempotentNatsConsumer> self = new AtomicReference<>();
            CountDownLatch closed = new CountDownLatch(1);
            publish(streams, "pay-3");
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
                publish(streams, "pay-w" + i);
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

    private static IdempotentNatsConsumer consumer(
            NatsFixture.Streams streams, String durable, int workers, MessageHandler handler) throws Exception {
        return IdempotentNatsConsumer.builder(nats)
                .consumer(streams.name, durable)
                .deadLetterSubject(streams.deadLetterSubject)
                .retryPolicy(FAST_RETRY)
                .workers(workers)
                .batchSize(10)
                .handler(handler)
                .build()
                .start();
    }

    private static void publish(NatsFixture.Streams streams, String id) throws Exception {
        nats.jetStream()
                .publish(NatsProducers.message(streams.subject("pay"), id, "acc:1".getBytes(StandardCharsets.UTF_8)));
    }
}
