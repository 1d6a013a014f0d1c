package dev.idem.nats;

import static dev.idem.nats.NatsFixture.FAST_RETRY;
import static dev.idem.nats.NatsFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Outcome;
import io.nats.client.api.ConsumerConfiguration;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/**
 * A durable consumer may bound what one pull asks for ({@code MaxRequestBatch}, {@code MaxRequestExpires}); the server
 * refuses every pull beyond them. The consumer asks within them, so every message is handled.
 */
class PullLimitsTest extends SharedNatsConnection {
    private static final int MESSAGES = 12;

    @Test
    void maxRequestBatchBelowTheBatchAndWorkers_pullsAskWithinIt_everyMessageHandled() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "maxbatch")) {
            String durable = streams.durable(
                    "limited",
                    ConsumerConfiguration.builder()
                            .ackWait(Duration.ofSeconds(5))
                            .maxBatch(2)
                            .build());
            assertEveryMessageHandled(streams, durable);
        }
    }

    @Test
    void maxRequestExpiresBelowTheFetchWait_pullsWaitWithinIt_everyMessageHandled() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "maxexpires")) {
            String durable = streams.durable(
                    "limited",
                    ConsumerConfiguration.builder()
                            .ackWait(Duration.ofSeconds(5))
                            .maxExpires(Duration.ofMillis(300))
                            .build());
            assertEveryMessageHandled(streams, durable);
        }
    }

    private static void assertEveryMessageHandled(NatsFixture.Streams streams, String durable) throws Exception {
        Set<String> handled = ConcurrentHashMap.newKeySet();
        try (IdempotentNatsConsumer consumer = IdempotentNatsConsumer.builder(nats)
                .consumer(streams.name, durable)
                .deadLetterSubject(streams.deadLetterSubject)
                .retryPolicy(FAST_RETRY)
                .batchSize(10)
                .workers(4)
                .fetchWait(Duration.ofSeconds(1))
                .handler((key, message) -> {
                    handled.add(key);
                    return Outcome.processed();
                })
                .build()
                .start()) {
            for (int i = 0; i < MESSAGES; i++) {
                nats.jetStream().publish(NatsProducers.message(streams.subject("pay"), "pay-" + i, new byte[] {1}));
            }
            await().atMost(WAIT).until(() -> handled.size() == MESSAGES || !consumer.isRunning());
            assertThat(consumer.failure()).isEmpty();
            assertThat(handled).hasSize(MESSAGES);
            streams.awaitDone(durable);
        }
    }
}
