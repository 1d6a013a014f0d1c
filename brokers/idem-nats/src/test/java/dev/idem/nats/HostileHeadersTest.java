package dev.idem.nats;

import static dev.idem.nats.NatsFixture.FAST_RETRY;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Guard;
import dev.idem.InMemoryStore;
import dev.idem.Outcome;
import io.nats.client.Connection;
import io.nats.client.Nats;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/** Headers a producer may set that the consumer's client cannot read. */
class HostileHeadersTest extends SharedNatsConnection {
    /**
     * The server passes any header bytes through (a Go producer may send {@code Trace: café}); jnats refuses a value
     * outside printable ASCII in its reader thread, which then reads nothing more while the connection still says
     * CONNECTED, until its pings give up (minutes, with the default two-minute interval). Before: the consumer sat
     * idle all that time, {@code isRunning()} true, the messages behind it unhandled. Now it notices that its
     * connection no longer answers, says why, and reconnects: the messages behind are handled.
     */
    @Test
    void headerValueOutsideAscii_stopsTheClientsReader_consumerReconnects_andHandlesTheMessagesBehind()
            throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "nonascii");
                Connection defaultPings = Nats.connect(NatsFixture.url())) {
            String durable = streams.durable("hostile", Duration.ofSeconds(5), -1);
            RawPublisher.publish(
                    NatsFixture.url(),
                    streams.subject("pay"),
                    "Trace",
                    "caf\u00e9".getBytes(StandardCharsets.UTF_8),
                    new byte[] {1});
            for (int i = 0; i < 3; i++) {
                nats.jetStream().publish(NatsProducers.message(streams.subject("pay"), "pay-" + i, new byte[] {1}));
            }
            Set<String> handled = ConcurrentHashMap.newKeySet();
            try (IdempotentNatsConsumer consumer = IdempotentNatsConsumer.builder(defaultPings)
                    .consumer(streams.name, durable)
                    .deadLetterSubject(streams.deadLetterSubject)
                    .retryPolicy(FAST_RETRY)
                    .handler((key, message) -> {
                        handled.add(key);
                        return Outcome.processed();
                    })
                    .build()
                    .start()) {
                await().atMost(Duration.ofSeconds(60)).until(() -> handled.size() == 3);
                assertThat(consumer.isRunning()).isTrue();
            }
        }
    }

    /**
     * Another producer's own {@code Nats-Msg-Id} values that start with {@code hex:} (a hash, say) are different
     * messages to JetStream when they differ in any character. Before: the key reader parsed any hex after the prefix,
     * so {@code hex:AB} and {@code hex:ab}, or {@code hex:61} and {@code a}, were one key: the second was answered
     * DUPLICATE and acked, its effect lost. Only the form {@link NatsProducers} writes is read as bytes.
     */
    @Test
    void foreignIdsThatStartWithHex_areEachTheirOwnKey() throws Exception {
        List<String> ids = List.of("hex:AB", "hex:ab", "a", "hex:61", "hex:6B2D", "k-");
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "foreignhex")) {
            String durable = streams.durable("foreign", Duration.ofSeconds(30), -1);
            for (String id : ids) {
                Headers headers = new Headers().put(NatsProducers.MSG_ID, id);
                nats.jetStream()
                        .publish(NatsMessage.builder()
                                .subject(streams.subject("pay"))
                                .headers(headers)
                                .data(id.getBytes(StandardCharsets.US_ASCII))
                                .build());
            }
            assertThat(streams.stored()).isEqualTo(ids.size());
            Guard guard = Guard.of(InMemoryStore.create(), durable);
            Set<String> applied = ConcurrentHashMap.newKeySet();
            try (IdempotentNatsConsumer consumer = IdempotentNatsConsumer.builder(nats)
                    .consumer(streams.name, durable)
                    .deadLetterSubject(streams.deadLetterSubject)
                    .retryPolicy(FAST_RETRY)
                    .handler((key, message) ->
                            guard.run(key, () -> applied.add(new String(message.getData(), StandardCharsets.US_ASCII))))
                    .build()
                    .start()) {
                streams.awaitDone(durable);
            }
            assertThat(applied).containsExactlyInAnyOrderElementsOf(ids);
        }
    }
}
