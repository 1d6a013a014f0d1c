package dev.idem.nats;

import static dev.idem.nats.NatsFixture.FAST_RETRY;
import static dev.idem.nats.NatsFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.ConfigurationException;
import dev.idem.Outcome;
import io.nats.client.Message;
import io.nats.client.api.AckPolicy;
import io.nats.client.api.ConsumerConfiguration;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/**
 * The server lets an operator edit {@code MaxRequestBatch}, {@code MaxRequestExpires}, {@code HeadersOnly} and {@code
 * MaxDeliver} on a live consumer. The running consumer reads its configuration again every AckWait: it follows new
 * pull limits, and stops with the reason on a configuration it refuses at start.
 */
class LiveEditTest extends SharedNatsConnection {
    private static final Duration ACK_WAIT = Duration.ofSeconds(1);

    @Test
    void maxRequestBatchLoweredWhileRunning_pullsFollowIt_everyMessageHandled() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "livebatch")) {
            String durable = streams.durable("live", ACK_WAIT, -1);
            Set<String> handled = ConcurrentHashMap.newKeySet();
            try (IdempotentNatsConsumer consumer = consumer(streams, durable, handled)) {
                edit(streams, durable, ConsumerConfiguration.builder().maxBatch(1));
                for (int i = 0; i < 8; i++) {
                    nats.jetStream().publish(NatsProducers.message(streams.subject("pay"), "pay-" + i, new byte[] {1}));
                }
                await().atMost(WAIT).until(() -> handled.size() == 8 || !consumer.isRunning());
                assertThat(consumer.failure()).isEmpty();
                assertThat(handled).hasSize(8);
            }
        }
    }

    /** Messages delivered right after the edit, before the periodic check, never reach the handler without body. */
    @Test
    void headersOnlyTurnedOnWhileRunning_noHandlerSeesAnEmptyBody_consumerStopsWithTheReason() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "liveheaders")) {
            String durable = streams.durable("live", ACK_WAIT, -1);
            Set<String> emptyBodies = ConcurrentHashMap.newKeySet();
            try (IdempotentNatsConsumer consumer = IdempotentNatsConsumer.builder(nats)
                    .consumer(streams.name, durable)
                    .deadLetterSubject(streams.deadLetterSubject)
                    .retryPolicy(FAST_RETRY)
                    .handler((key, message) -> {
                        if (message.getData().length == 0) {
                            emptyBodies.add(key);
                        }
                        return Outcome.processed();
                    })
                    .build()
                    .start()) {
                edit(streams, durable, ConsumerConfiguration.builder().headersOnly(true));
                for (int i = 0; i < 5; i++) {
                    nats.jetStream().publish(NatsProducers.message(streams.subject("pay"), "pay-" + i, new byte[] {1}));
                }

                await().atMost(WAIT).until(() -> !consumer.isRunning());
                assertThat(emptyBodies).as("handled without their body").isEmpty();
                assertThat(consumer.failure())
                        .get()
                        .isInstanceOf(ConfigurationException.class)
                        .asString()
                        .contains("HeadersOnly");
            }
        }
    }

    @Test
    void producersOwnMsgSizeHeader_onAnEmptyBody_isHandled_andTheConsumerRunsOn() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "msgsize")) {
            String durable = streams.durable("live", ACK_WAIT, -1);
            Set<String> handled = ConcurrentHashMap.newKeySet();
            try (IdempotentNatsConsumer consumer = consumer(streams, durable, handled)) {
                Message empty = NatsProducers.message(streams.subject("pay"), "pay-1", new byte[0]);
                empty.getHeaders().put("Nats-Msg-Size", "5");
                nats.jetStream().publish(empty);

                await().atMost(WAIT).until(() -> handled.contains("pay-1") || !consumer.isRunning());
                assertThat(consumer.failure()).isEmpty();
                assertThat(handled).containsExactly("pay-1");
            }
        }
    }

    /**
     * An operator deletes the durable consumer (or its stream) under a running consumer. Before: every later pull
     * came back empty without a word, the configuration check kept the old settings, and the consumer sat idle with
     * {@code isRunning()} true, the stream's messages unconsumed. Now a consumer still gone at the next check, one
     * AckWait later, stops it with the reason and the fix, as {@code start()} refuses a missing consumer.
     */
    @Test
    void consumerDeletedWhileRunning_consumerStopsWithTheReason() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "livedelete")) {
            String durable = streams.durable("live", ACK_WAIT, -1);
            Set<String> handled = ConcurrentHashMap.newKeySet();
            try (IdempotentNatsConsumer consumer = consumer(streams, durable, handled)) {
                nats.jetStreamManagement().deleteConsumer(streams.name, durable);

                await().atMost(WAIT).until(() -> !consumer.isRunning());
                assertThat(consumer.failure())
                        .get()
                        .isInstanceOf(ConfigurationException.class)
                        .asString()
                        .contains("not found", "create");
            }
        }
    }

    private static IdempotentNatsConsumer consumer(NatsFixture.Streams streams, String durable, Set<String> handled)
            throws Exception {
        return IdempotentNatsConsumer.builder(nats)
                .consumer(streams.name, durable)
                .deadLetterSubject(streams.deadLetterSubject)
                .retryPolicy(FAST_RETRY)
                .workers(4)
                .fetchWait(Duration.ofMillis(500))
                .handler((key, message) -> {
                    handled.add(key);
                    return Outcome.processed();
                })
                .build()
                .start();
    }

    private static void edit(NatsFixture.Streams streams, String durable, ConsumerConfiguration.Builder edit)
            throws Exception {
        nats.jetStreamManagement()
                .addOrUpdateConsumer(
                        streams.name,
                        edit.durable(durable)
                                .ackPolicy(AckPolicy.Explicit)
                                .ackWait(ACK_WAIT)
                                .maxDeliver(-1)
                                .build());
    }
}
