package dev.idem.nats;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.ConfigurationException;
import dev.idem.Outcome;
import io.nats.client.api.AckPolicy;
import io.nats.client.api.ConsumerConfiguration;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** What {@link IdempotentNatsConsumer} refuses, in the builder and against the server at start. */
class ConfigurationTest extends SharedNatsConnection {
    @Test
    void builder_requiresConsumerDeadLetterSubjectAndHandler() {
        assertThatThrownBy(() -> IdempotentNatsConsumer.builder(nats).build())
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining(".consumer(");
        assertThatThrownBy(() ->
                        IdempotentNatsConsumer.builder(nats).consumer("S", "d").build())
                .hasMessageContaining(".deadLetterSubject(");
        assertThatThrownBy(() -> IdempotentNatsConsumer.builder(nats)
                        .consumer("S", "d")
                        .deadLetterSubject("dlq")
                        .build())
                .hasMessageContaining(".handler(");
        assertThatThrownBy(() -> IdempotentNatsConsumer.builder(nats).deadLetterSubject("dlq.>"))
                .hasMessageContaining("plain subject");
        assertThatThrownBy(() -> IdempotentNatsConsumer.builder(nats).workers(0))
                .hasMessageContaining("workers");
        assertThatThrownBy(() -> IdempotentNatsConsumer.builder(nats).fetchWait(Duration.ZERO))
                .hasMessageContaining("fetchWait");
    }

    @Test
    void start_missingConsumer_refusedWithTheFix() {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "noconsumer")) {
            assertThatThrownBy(() -> consumer(streams, "missing", streams.deadLetterSubject)
                            .start())
                    .isInstanceOf(ConfigurationException.class)
                    .hasMessageContaining("consumer missing of stream " + streams.name + " cannot be read")
                    .hasMessageContaining("AckPolicy.Explicit");
        }
    }

    @Test
    void start_ackPolicyNone_refused() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "acknone")) {
            nats.jetStreamManagement()
                    .addOrUpdateConsumer(
                            streams.name,
                            ConsumerConfiguration.builder()
                                    .durable("none")
                                    .ackPolicy(AckPolicy.None)
                                    .build());
            assertThatThrownBy(() ->
                            consumer(streams, "none", streams.deadLetterSubject).start())
                    .isInstanceOf(ConfigurationException.class)
                    .hasMessageContaining("has AckPolicy None");
        }
    }

    /** A HeadersOnly consumer delivers every message without its body: handlers would act on empty data. */
    @Test
    void start_headersOnlyConsumer_refusedWithTheFix() {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "headersonly")) {
            String durable = streams.durable(
                    "headers", ConsumerConfiguration.builder().headersOnly(true).build());
            assertThatThrownBy(() -> consumer(streams, durable, streams.deadLetterSubject)
                            .start())
                    .isInstanceOf(ConfigurationException.class)
                    .hasMessageContaining("HeadersOnly")
                    .hasMessageContaining("headersOnly(false)");
        }
    }

    /**
     * The server counts every delivery toward MaxDeliver, also those lost to a crash, a cut connection or an expired
     * AckWait: when the last one is lost, the server gives the message up silently, never handled, never
     * dead-lettered.
     */
    @Test
    void start_boundedMaxDeliver_refusedWithTheFix() {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "maxdeliver")) {
            String durable = streams.durable("bounded", Duration.ofSeconds(1), 5);
            assertThatThrownBy(() -> consumer(streams, durable, streams.deadLetterSubject)
                            .start())
                    .isInstanceOf(ConfigurationException.class)
                    .hasMessageContaining("MaxDeliver 5")
                    .hasMessageContaining("maxDeliver(-1)");
        }
    }

    @Test
    void start_deadLetterSubjectWithoutStream_refused_andLoopingBack_refused() {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "dlqcheck")) {
            String durable = streams.durable("checked", Duration.ofSeconds(1), -1);
            assertThatThrownBy(() -> consumer(streams, durable, streams.prefix + "-nowhere")
                            .start())
                    .isInstanceOf(ConfigurationException.class)
                    .hasMessageContaining("no stream captures");
            assertThatThrownBy(() ->
                            consumer(streams, durable, streams.subject("dlq")).start())
                    .isInstanceOf(ConfigurationException.class)
                    .hasMessageContaining("would come back to the handler");
        }
    }

    @Test
    void start_readsAckWait_andCannotStartTwice() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "startedtwice")) {
            String durable = streams.durable("once", Duration.ofSeconds(2), -1);
            try (IdempotentNatsConsumer consumer =
                    consumer(streams, durable, streams.deadLetterSubject).start()) {
                assertThat(consumer.ackWait()).isEqualTo(Duration.ofSeconds(2));
                assertThat(consumer.isRunning()).isTrue();
                assertThatThrownBy(consumer::start).isInstanceOf(IllegalStateException.class);
            }
        }
    }

    private static IdempotentNatsConsumer consumer(NatsFixture.Streams streams, String durable, String dlq) {
        return IdempotentNatsConsumer.builder(nats)
                .consumer(streams.name, durable)
                .deadLetterSubject(dlq)
                .handler((key, message) -> Outcome.processed())
                .build();
    }
}
