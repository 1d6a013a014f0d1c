package dev.idem.nats;

import static dev.idem.nats.NatsFixture.FAST_RETRY;
import static dev.idem.nats.NatsFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyKey;
import dev.idem.IdempotencyListener;
import dev.idem.Outcome;
import io.nats.client.Connection;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The consumer reports its retries, dead letters and confirmed acks to its listener, with the attempt. */
class EventsTest {
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
    void failedOnce_thenProcessed_retryScheduledThenCommitted_rejected_deadLettered() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "events")) {
            String durable = streams.durable("events", Duration.ofSeconds(1), -1);
            List<IdempotencyEvent> events = new CopyOnWriteArrayList<>();
            publish(streams, "pay-1", "flaky");
            publish(streams, "pay-2", "poison");
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
            publish(streams, "pay-3", "flaky");
            publish(streams, "pay-4", "poison");
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
        return IdempotentNatsConsumer.builder(nats)
                .consumer(streams.name, durable)
                .deadLetterSubject(streams.deadLetterSubject)
                .retryPolicy(FAST_RETRY)
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

    private static void publish(NatsFixture.Streams streams, String id, String body) throws Exception {
        nats.jetStream()
                .publish(NatsProducers.message(streams.subject("pay"), id, body.getBytes(StandardCharsets.UTF_8)));
    }
}
