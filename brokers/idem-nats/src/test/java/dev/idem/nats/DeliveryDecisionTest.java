package dev.idem.nats;

import static dev.idem.nats.NatsFixture.FAST_RETRY;
import static dev.idem.nats.NatsFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Outcome;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * The consumer settles each delivery by the core's one decision: only the handler's own failures count toward the
 * retry bound; a key held elsewhere and an unreachable database are waits, however many deliveries they take.
 */
class DeliveryDecisionTest extends SharedNatsConnection {
    @Test
    void failingAfterWaitsOnAHeldKey_boundCountsOnlyTheFailures_deadLetteredAfterThree() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "waitsthenfail")) {
            String durable = streams.durable("decided", Duration.ofSeconds(5), -1);
            List<String> seen = new CopyOnWriteArrayList<>();
            nats.jetStream().publish(NatsProducers.message(streams.subject("pay"), "pay-1", new byte[] {1}));
            try (IdempotentNatsConsumer consumer = consumer(streams, durable, (key, message) -> {
                long delivery = message.metaData().deliveredCount();
                seen.add(Long.toString(delivery));
                if (delivery <= 3) {
                    return Outcome.inProgress("held by another consumer", null);
                }
                throw new IllegalStateException("ledger service down");
            })) {
                await().atMost(WAIT).until(() -> streams.deadLetters().size() == 1);
                streams.awaitDone(durable);
            }

            assertThat(seen).as("3 waits, then 3 failures").containsExactly("1", "2", "3", "4", "5", "6");
            assertThat(streams.deadLetters().get(0).getHeaders().getFirst(IdempotentNatsConsumer.DLQ_REASON))
                    .startsWith("gave up after 3 attempts; last: handler threw java.lang.IllegalStateException");
        }
    }

    private static IdempotentNatsConsumer consumer(NatsFixture.Streams streams, String durable, MessageHandler handler)
            throws Exception {
        return streams.consumer(durable)
                .retryPolicy(FAST_RETRY.toBuilder().maxAttempts(3).build())
                .handler(handler)
                .build()
                .start();
    }
}
