package dev.idem.nats;

import static dev.idem.nats.NatsFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.DeadLetterException;
import dev.idem.IdempotencyEvent;
import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import io.nats.client.JetStreamManagement;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.PullSubscribeOptions;
import io.nats.client.api.MessageInfo;
import io.nats.client.api.RetentionPolicy;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Messages the handler cannot handle go to the dead-letter subject with their reason, and only then are terminated;
 * retried messages respect the attempt bound and the server's MaxDeliver; a message in progress elsewhere is never
 * given up by a bound.
 */
class PoisonMessageTest extends SharedNatsConnection {
    @Test
    void rejected_deadLetteredWithReason_thenTerminated_handledOnce() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "rejected")) {
            String durable = streams.durable("poison", Duration.ofSeconds(1), -1);
            AtomicInteger calls = new AtomicInteger();
            publish(streams, "pay-1", "acc:-5");
            try (IdempotentNatsConsumer consumer = consumer(streams, durable, (key, message) -> {
                calls.incrementAndGet();
                throw new DeadLetterException("amount must be positive", null);
            })) {
                await().atMost(WAIT).until(() -> streams.deadLetters().size() == 1);
                streams.awaitDone(durable);
            }

            MessageInfo dead = streams.deadLetters().get(0);
            Headers h = dead.getHeaders();
            assertThat(h.getFirst(IdempotentNatsConsumer.DLQ_REASON)).isEqualTo("amount must be positive");
            assertThat(h.getFirst(IdempotentNatsConsumer.DLQ_OUTCOME)).isEqualTo("REJECTED");
            assertThat(h.getFirst(IdempotentNatsConsumer.DLQ_ATTEMPTS)).isEqualTo("1");
            assertThat(h.getFirst(IdempotentNatsConsumer.DLQ_STREAM)).isEqualTo(streams.name);
            assertThat(h.getFirst(IdempotentNatsConsumer.DLQ_CONSUMER)).isEqualTo(durable);
            assertThat(h.getFirst(IdempotentNatsConsumer.DLQ_SUBJECT)).isEqualTo(streams.subject("pay"));
            assertThat(h.getFirst(IdempotentNatsConsumer.DLQ_SEQUENCE)).isEqualTo("1");
            assertThat(h.getFirst(IdempotentNatsConsumer.DLQ_MSG_ID)).isEqualTo("pay-1");
            assertThat(new String(dead.getData(), StandardCharsets.UTF_8)).isEqualTo("acc:-5");
            assertThat(calls).as("terminated: never redelivered").hasValue(1);
        }
    }

    @Test
    void rejected_afterTheStreamWasRecreated_sameSequence_isStillDeadLettered() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "recreated")) {
            for (String id : List.of("pay-1", "pay-2")) {
                if (id.equals("pay-2")) {
                    streams.recreate();
                }
                String durable = streams.durable("poison", Duration.ofSeconds(1), -1);
                publish(streams, id, id);
                try (IdempotentNatsConsumer consumer = consumer(streams, durable, (key, message) -> {
                    throw new DeadLetterException("amount must be positive", null);
                })) {
                    streams.awaitDone(durable);
                }
            }

            assertThat(streams.deadLetters())
                    .as("both stream sequence 1, in two lives of the stream: neither is a duplicate of the other")
                    .extracting(dead -> new String(dead.getData(), StandardCharsets.UTF_8))
                    .containsExactly("pay-1", "pay-2");
        }
    }

    @Test
    void rejected_plainConsumerNakingFailures_redeliversUntilMaxDeliver_andKeepsNoRecord() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "plainpoison")) {
            String durable = streams.durable("plain", Duration.ofSeconds(1), 3);
            publish(streams, "pay-2", "acc:-5");
            JetStreamSubscription plain =
                    nats.jetStream().subscribe(null, PullSubscribeOptions.bind(streams.name, durable));
            int deliveries = 0;
            for (List<Message> batch = plain.fetch(1, Duration.ofSeconds(2));
                    !batch.isEmpty();
                    batch = plain.fetch(1, Duration.ofSeconds(2))) {
                deliveries++;
                batch.get(0).nak();
            }

            assertThat(deliveries)
                    .as("handled again and again, then silently given up")
                    .isEqualTo(3);
            assertThat(streams.deadLetters()).isEmpty();
        }
    }

    @Test
    void deadLetterStreamGone_rejectedMessageIsKeptAndRetried_deadLetteredOnceItIsBack() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "dlqgone")) {
            String durable = streams.durable("poison", Duration.ofSeconds(1), -1);
            AtomicInteger calls = new AtomicInteger();
            try (IdempotentNatsConsumer consumer = consumer(streams, durable, (key, message) -> {
                calls.incrementAndGet();
                return Outcome.rejected("unknown currency");
            })) {
                nats.jetStreamManagement().deleteStream(streams.deadLetterStream);
                publish(streams, "pay-6", "acc:5");
                await().atMost(WAIT).until(() -> calls.get() >= 3);
                assertThat(streams.info(durable).getNumAckPending())
                        .as("not terminated without a dead letter")
                        .isEqualTo(1);
                int before = calls.get();
                await().atMost(WAIT)
                        .until(() -> calls.get() >= before + 20 || !consumer.isRunning()); // 2 s: 2 AckWaits
                assertThat(consumer.failure())
                        .as("the running consumer's checks (every AckWait) do not stop it for a dead-letter outage")
                        .isEmpty();
                nats.jetStreamManagement()
                        .addStream(StreamConfiguration.builder()
                                .name(streams.deadLetterStream)
                                .subjects(streams.deadLetterSubject)
                                .storageType(StorageType.File)
                                .build());
                await().atMost(WAIT).until(() -> streams.deadLetters().size() == 1);
                streams.awaitDone(durable);
            }
            assertThat(streams.deadLetters().get(0).getHeaders().getFirst(IdempotentNatsConsumer.DLQ_REASON))
                    .isEqualTo("unknown currency");
        }
    }

    @Test
    void rejected_withServerHeadersOnTheOriginal_deadLetterStillStored_applicationHeadersKept() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "serverheaders")) {
            String durable = streams.durable("poison", Duration.ofSeconds(1), -1);
            nats.jetStream()
                    .publish(NatsMessage.builder()
                            .subject(streams.subject("pay"))
                            .headers(new Headers()
                                    .put(NatsProducers.MSG_ID, "pay-7")
                                    .put("Nats-Expected-Stream", streams.name)
                                    .put("Trace-Id", "t-1"))
                            .data("acc:-1".getBytes(StandardCharsets.UTF_8))
                            .build());
            try (IdempotentNatsConsumer consumer =
                    consumer(streams, durable, (key, message) -> Outcome.rejected("negative amount"))) {
                await().atMost(WAIT).until(() -> streams.deadLetters().size() == 1);
                streams.awaitDone(durable);
            }
            Headers h = streams.deadLetters().get(0).getHeaders();
            assertThat(h.getFirst("Trace-Id")).isEqualTo("t-1");
            assertThat(h.getFirst("Nats-Expected-Stream")).isNull();
            assertThat(h.getFirst(IdempotentNatsConsumer.DLQ_REASON)).isEqualTo("negative amount");
        }
    }

    /**
     * A message near the server's {@code max_payload} leaves no room for the dead-letter headers next to its own: the
     * dead letter drops the application headers and says so, and keeps the data (before: the client refused the copy
     * at every delivery and the message went round for ever).
     */
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
            try (IdempotentNatsConsumer consumer = consumer(streams, durable, (key, message) -> {
                calls.incrementAndGet();
                return Outcome.rejected("amount must be positive");
            })) {
                await().atMost(Duration.ofSeconds(10))
                        .until(() -> streams.deadLetters().size() == 1);
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

    /**
     * A message whose data alone leaves less room than the dead-letter headers need below {@code max_payload} (a
     * producer that fills messages up to the limit): its dead letter is stored without the data and names where the
     * original is, and the original is terminated, which keeps it in a stream with Limits retention (before: the
     * publish was treated like an unavailable dead-letter stream, and the message went round for ever as an uncounted
     * wait, its handler run again each time, never dead-lettered nor terminated).
     */
    @Test
    void rejectedMessageFillingMaxPayload_isDeadLetteredOrTerminated_notCycledForEver() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "fullmsg")) {
            String durable = streams.durable("full", Duration.ofSeconds(5), -1);
            byte[] data = new byte[(int) nats.getMaxPayload() - 100];
            nats.jetStream().publish(NatsProducers.message(streams.subject("pay"), "pay-1", data));
            AtomicInteger calls = new AtomicInteger();
            try (IdempotentNatsConsumer consumer = consumer(streams, durable, (key, message) -> {
                calls.incrementAndGet();
                return Outcome.rejected("amount must be positive");
            })) {
                await().atMost(Duration.ofSeconds(10))
                        .until(() -> !streams.deadLetters().isEmpty() || calls.get() > 5);
                streams.awaitDone(durable);
            }
            assertThat(calls).as("handler runs of a rejected message").hasValue(1);
            assertThat(streams.deadLetters()).hasSize(1);
            assertNamesTheOriginalWithoutItsData(streams.deadLetters().get(0), streams, data.length, "max_payload");
            assertThat(nats.jetStreamManagement().getMessage(streams.name, 1).getData())
                    .as("terminated, and kept in the stream (Limits retention)")
                    .isEqualTo(data);
        }
    }

    /** The dead-letter stream's own max_msg_size refuses the copy: the same dead letter without the data. */
    @Test
    void rejectedMessageOverTheDeadLetterStreamsMaxMsgSize_deadLetteredWithoutItsData_terminated() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "dlqmaxmsg")) {
            JetStreamManagement jsm = nats.jetStreamManagement();
            jsm.updateStream(StreamConfiguration.builder(
                            jsm.getStreamInfo(streams.deadLetterStream).getConfiguration())
                    .maximumMessageSize(2048)
                    .build());
            String durable = streams.durable("big", Duration.ofSeconds(5), -1);
            byte[] data = new byte[4096];
            nats.jetStream().publish(NatsProducers.message(streams.subject("pay"), "pay-1", data));
            AtomicInteger calls = new AtomicInteger();
            try (IdempotentNatsConsumer consumer = consumer(streams, durable, (key, message) -> {
                calls.incrementAndGet();
                return Outcome.rejected("amount must be positive");
            })) {
                await().atMost(Duration.ofSeconds(10))
                        .until(() -> !streams.deadLetters().isEmpty() || calls.get() > 5);
                streams.awaitDone(durable);
            }
            assertThat(calls).hasValue(1);
            assertThat(streams.deadLetters()).hasSize(1);
            assertNamesTheOriginalWithoutItsData(
                    streams.deadLetters().get(0), streams, data.length, "dead-letter stream's maximum");
        }
    }

    /**
     * With WorkQueue retention a term deletes the message, and the data-less dead letter would name a message that is
     * gone: the original stays pending, delivered again after the longest back-off, and each time the consumer says so
     * (a RETRY_SCHEDULED event with the REJECTED outcome; an ERROR log), never DEAD_LETTERED, never deleted.
     */
    @Test
    void rejectedMessageFillingMaxPayload_inAWorkQueueStream_keptPendingWithLongestBackOff_neverDeleted()
            throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "fullwq", RetentionPolicy.WorkQueue)) {
            String durable = streams.durable("full", Duration.ofSeconds(5), -1);
            byte[] data = new byte[(int) nats.getMaxPayload() - 100];
            nats.jetStream().publish(NatsProducers.message(streams.subject("pay"), "pay-1", data));
            List<IdempotencyEvent> events = new CopyOnWriteArrayList<>();
            try (IdempotentNatsConsumer consumer = IdempotentNatsConsumer.builder(nats)
                    .consumer(streams.name, durable)
                    .deadLetterSubject(streams.deadLetterSubject)
                    .retryPolicy(RetryPolicy.builder()
                            .initialDelay(Duration.ofMillis(10))
                            .multiplier(2.0)
                            .maxDelay(Duration.ofMillis(200))
                            .maxAttempts(300)
                            .jitter(0.0)
                            .build())
                    .handler((key, message) -> Outcome.rejected("amount must be positive"))
                    .listener(events::add)
                    .build()
                    .start()) {
                await().atMost(WAIT).until(() -> events.size() >= 3);
                assertThat(streams.info(durable).getNumAckPending())
                        .as("kept pending, not terminated")
                        .isEqualTo(1);
            }
            assertThat(events).allSatisfy(e -> {
                assertThat(e.type()).isEqualTo(IdempotencyEvent.Type.RETRY_SCHEDULED);
                assertThat(e.outcome().type()).isEqualTo(Outcome.Type.REJECTED);
                assertThat(e.message()).contains("kept pending").endsWith("nak with delay 200 ms");
            });
            assertThat(streams.deadLetters())
                    .as("one dead letter without the data: the same delivery's copies fall in the duplicate window")
                    .hasSize(1);
            assertNamesTheOriginalWithoutItsData(streams.deadLetters().get(0), streams, data.length, "max_payload");
            assertThat(nats.jetStreamManagement().getMessage(streams.name, 1).getData())
                    .as("the original is still in the stream")
                    .isEqualTo(data);
        }
    }

    private static void assertNamesTheOriginalWithoutItsData(
            MessageInfo dead, NatsFixture.Streams streams, int size, String limit) {
        Headers h = dead.getHeaders();
        assertThat(dead.getData()).isNullOrEmpty();
        assertThat(h.getFirst(IdempotentNatsConsumer.DLQ_DATA_OMITTED)).isEqualTo(Integer.toString(size));
        assertThat(h.getFirst(IdempotentNatsConsumer.DLQ_STREAM)).isEqualTo(streams.name);
        assertThat(h.getFirst(IdempotentNatsConsumer.DLQ_SEQUENCE)).isEqualTo("1");
        assertThat(h.getFirst(IdempotentNatsConsumer.DLQ_SUBJECT)).isEqualTo(streams.subject("pay"));
        assertThat(h.getFirst(IdempotentNatsConsumer.DLQ_KEY)).isEqualTo("pay-1");
        assertThat(h.getFirst(IdempotentNatsConsumer.DLQ_MSG_ID)).isEqualTo("pay-1");
        assertThat(h.getFirst(IdempotentNatsConsumer.DLQ_REASON))
                .startsWith("amount must be positive")
                .contains(limit)
                .contains("left out");
    }

    private static IdempotentNatsConsumer consumer(NatsFixture.Streams streams, String durable, MessageHandler handler)
            throws Exception {
        return streams.consumer(durable).handler(handler).build().start();
    }

    private static void publish(NatsFixture.Streams streams, String id, String body) throws Exception {
        nats.jetStream()
                .publish(NatsMessage.builder()
                        .subject(streams.subject("pay"))
                        .headers(new Headers().put(NatsProducers.MSG_ID, id))
                        .data(body.getBytes(StandardCharsets.UTF_8))
                        .build());
    }
}
