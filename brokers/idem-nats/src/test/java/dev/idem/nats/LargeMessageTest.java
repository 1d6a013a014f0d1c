package dev.idem.nats;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Outcome;
import io.nats.client.Connection;
import io.nats.client.api.MessageInfo;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A message near the server's {@code max_payload} leaves no room for the dead-letter headers next to its own: the dead
 * letter drops the message's application headers and says so, and keeps its data. Before, the copy was refused by
 * the client at every delivery and the message went round (nak, redeliver) for ever.
 */
class LargeMessageTest {
    /** Long enough for several rounds if the message loops; a dead letter takes milliseconds. */
    private static final Duration SETTLED = Duration.ofSeconds(10);

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
    void rejectedMessageNearMaxPayload_deadLetteredWithItsData_withoutItsOwnHeaders() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "largemsg")) {
            String durable = streams.durable("large", Duration.ofSeconds(5), -1);
            byte[] data = new byte[(int) nats.getMaxPayload() - 800];
            nats.jetStream()
                    .publish(NatsMessage.builder()
                            .subject(streams.subject("pay"))
                            .headers(new Headers()
                                    .put(NatsProducers.MSG_ID, "pay-1")
                                    .put("Trace", "t".repeat(600)))
                            .data(data)
                            .build());
            AtomicInteger calls = new AtomicInteger();
            try (IdempotentNatsConsumer consumer = IdempotentNatsConsumer.builder(nats)
                    .consumer(streams.name, durable)
                    .deadLetterSubject(streams.deadLetterSubject)
                    .retryPolicy(NatsFixture.FAST_RETRY)
                    .handler((key, message) -> {
                        calls.incrementAndGet();
                        return Outcome.rejected("amount must be positive");
                    })
                    .build()
                    .start()) {
                await().atMost(SETTLED).until(() -> streams.deadLetters().size() == 1);
                streams.awaitDone(durable);
            }
            MessageInfo dead = streams.deadLetters().get(0);
            assertThat(dead.getHeaders().getFirst(IdempotentNatsConsumer.DLQ_REASON))
                    .startsWith("amount must be positive")
                    .contains("max_payload");
            assertThat(dead.getHeaders().getFirst("Trace")).isNull();
            assertThat(dead.getHeaders().getFirst(IdempotentNatsConsumer.DLQ_MSG_ID))
                    .isEqualTo("pay-1");
            assertThat(dead.getData()).hasSize(data.length);
            assertThat(calls).hasValue(1);
        }
    }
}
