package dev.idem.nats;

import static dev.idem.nats.NatsFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyKey;
import dev.idem.IdempotencyListener;
import dev.idem.Outcome;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/** The consumer reports its retries, dead letters and confirmed acks to its listener, with the attempt. */
class EventsTest extends SharedNatsConnection {
    @Test
    void failedOnce_thenProcessed_retryScheduledThenCommitted_rejected_deadLettered() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "events")) {
            String durable = streams.durable("events", Duration.ofSeconds(1), -1);
            List<IdempotencyEvent> events = new CopyOnWriteArrayList<>();
            streams.publish("pay-1", "flaky");
            streams.publish("pay-2", "poison");
            try (IdempotentNatsConsumer consumer = consumer(streams, durable, events::add)) {
                await().atMost(WAIT).until(() -> events.size() == 3);
                streams.awaitDone(durable);
            }

            String flaky = IdempotencyKey.of(durable, "pay-1").logId();
            String poison = IdempotencyKey.of(durable, "pay-2").logId();
            assertThat(events).allSatisfy(e -> {
                assertThat(e.source()).isEqualTo("nats");
                assertThat(e.namespace()).isEqualTo(durable);
            });
            assertThat(events)
                    .extracting(e -> e.type() + " " + e.keyLogId() + " " + e.attempt())
                    .containsExactlyInAnyOrder(
                            "RETRY_SCHEDULED " + flaky + " 1",
                            "COMMITTED " + flaky + " 2",
                            "DEAD_LETTERED " + poison + " 1");
            assertThat(events)
                    .filteredOn(e -> e.type() == IdempotencyEvent.Type.DEAD_LETTERED)
                    .singleElement()
                    .satisfies(e -> assertThat(e.outcome().reason()).isEqualTo("bad payload"));
        }
    }

    @Test
    void throwingListener_isIgnored_messagesStillSettled() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "badlistener")) {
            String durable = streams.durable("events", Duration.ofSeconds(1), -1);
            streams.publish("pay-3", "flaky");
            streams.publish("pay-4", "poison");
            try (IdempotentNatsConsumer consumer = consumer(streams, durable, event -> {
                throw new IllegalStateException("metrics backend down");
            })) {
                streams.awaitDone(durable);
            }
            assertThat(streams.deadLetters()).hasSize(1);
        }
    }

    private static IdempotentNatsConsumer consumer(
            NatsFixture.Streams streams, String durable, IdempotencyListener listener) throws Exception {
        List<String> seen = new CopyOnWriteArrayList<>();
        return streams.consumer(durable)
                .listener(listener)
                .handler((key, message) -> {
                    String body = new String(message.getData(), StandardCharsets.UTF_8);
                    if (body.equals("poison")) {
                        return Outcome.rejected("bad payload");
                    }
                    return seen.add(key) && message.metaData().deliveredCount() == 1
                            ? Outcome.failed("first attempt fails", null)
                            : Outcome.processed();
                })
                .build()
                .start();
    }
}
