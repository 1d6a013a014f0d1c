package dev.idem.nats;

import static dev.idem.nats.NatsFixture.FAST_RETRY;
import static dev.idem.nats.NatsFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.DeadLetterException;
import dev.idem.Guard;
import dev.idem.InMemoryStore;
import dev.idem.Outcome;
import io.nats.client.Connection;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.PullSubscribeOptions;
import io.nats.client.api.MessageInfo;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Messages the handler cannot handle go to the dead-letter subject with their reason, and only then are terminated;
 * retried messages respect the attempt bound and the server's MaxDeliver; a message in progress elsewhere is never
 * given up by a bound.
 */
class PoisonMessageTest {
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
    void noKey_deadLetteredWithReason_handlerNeverRuns() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "nokey")) {
            String durable = streams.durable("nokey", Duration.ofSeconds(1), -1);
            nats.jetStream().publish(streams.subject("pay"), "acc:5".getBytes(StandardCharsets.UTF_8));
            AtomicInteger calls = new AtomicInteger();
            try (IdempotentNatsConsumer consumer = consumer(streams, durable, (key, message) -> {
                calls.incrementAndGet();
                return Outcome.processed();
            })) {
                await().atMost(WAIT).until(() -> streams.deadLetters().size() == 1);
                streams.awaitDone(durable);
            }

            assertThat(streams.deadLetters().get(0).getHeaders().getFirst(IdempotentNatsConsumer.DLQ_REASON))
                    .startsWith("no idempotency key: header Nats-Msg-Id is missing or blank");
            assertThat(calls).hasValue(0);
        }
    }

    @Test
    void failingHandler_deadLetteredAfterMaxAttempts_withTheLastReason() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "exhausted")) {
            String durable = streams.durable("failing", Duration.ofSeconds(1), -1);
            List<Long> attempts = new CopyOnWriteArrayList<>();
            publish(streams, "pay-3", "acc:5");
            try (IdempotentNatsConsumer consumer = IdempotentNatsConsumer.builder(nats)
                    .consumer(streams.name, durable)
                    .deadLetterSubject(streams.deadLetterSubject)
                    .retryPolicy(FAST_RETRY.toBuilder().maxAttempts(3).build())
                    .handler((key, message) -> {
                        attempts.add(message.metaData().deliveredCount());
                        throw new IllegalStateException("ledger service down");
                    })
                    .build()
                    .start()) {
                await().atMost(WAIT).until(() -> streams.deadLetters().size() == 1);
                streams.awaitDone(durable);
            }

            assertThat(attempts).containsExactly(1L, 2L, 3L);
            Headers h = streams.deadLetters().get(0).getHeaders();
            assertThat(h.getFirst(IdempotentNatsConsumer.DLQ_OUTCOME)).isEqualTo("FAILED");
            assertThat(h.getFirst(IdempotentNatsConsumer.DLQ_ATTEMPTS)).isEqualTo("3");
            assertThat(h.getFirst(IdempotentNatsConsumer.DLQ_REASON))
                    .isEqualTo("gave up after 3 attempts; last: handler threw java.lang.IllegalStateException:"
                            + " ledger service down");
        }
    }

    @Test
    void failingHandler_boundedMaxDeliver_deadLetteredAtTheServersLastDelivery() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "maxdeliver")) {
            String durable = streams.durable("failing", Duration.ofSeconds(1), 2);
            List<Long> attempts = new CopyOnWriteArrayList<>();
            publish(streams, "pay-4", "acc:5");
            try (IdempotentNatsConsumer consumer = consumer(streams, durable, (key, message) -> {
                attempts.add(message.metaData().deliveredCount());
                return Outcome.outOfOrder("order not created yet");
            })) {
                await().atMost(WAIT).until(() -> streams.deadLetters().size() == 1);
                streams.awaitDone(durable);
            }

            assertThat(attempts).as("the retry policy allows 300, the server 2").containsExactly(1L, 2L);
            assertThat(streams.deadLetters().get(0).getHeaders().getFirst(IdempotentNatsConsumer.DLQ_REASON))
                    .isEqualTo("gave up after 2 attempts; last: order not created yet");
        }
    }

    @Test
    void inProgressAtTheServersLastDelivery_heldByItsWorker_notLostNorDeadLettered_ackedOnceTheKeyIsFree()
            throws Exception {
        ExecutorService holder = Executors.newSingleThreadExecutor();
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "heldlast");
                Guard guard = Guard.of(InMemoryStore.create(), "heldlast")) {
            String durable = streams.durable("held", Duration.ofSeconds(1), 2);
            CountDownLatch claimed = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            Future<Outcome> first = holder.submit(() -> guard.run("pay-5", () -> {
                claimed.countDown();
                release.await(WAIT.toSeconds(), TimeUnit.SECONDS);
            }));
            assertThat(claimed.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
            List<String> seen = new CopyOnWriteArrayList<>();
            publish(streams, "pay-5", "acc:5");
            try (IdempotentNatsConsumer consumer = consumer(streams, durable, (key, message) -> {
                Outcome outcome = guard.run(key, () -> {
                    throw new AssertionError("the key is held: the effect must not run here");
                });
                seen.add(message.metaData().deliveredCount() + ":" + outcome.type());
                return outcome;
            })) {
                await().atMost(WAIT)
                        .until(() -> seen.stream()
                                        .filter(s -> s.equals("2:IN_PROGRESS"))
                                        .count()
                                >= 2);
                release.countDown();
                assertThat(first.get(WAIT.toSeconds(), TimeUnit.SECONDS).type()).isEqualTo(Outcome.Type.PROCESSED);
                streams.awaitDone(durable);
            }

            assertThat(seen).startsWith("1:IN_PROGRESS", "2:IN_PROGRESS").endsWith("2:DUPLICATE");
            assertThat(streams.deadLetters()).isEmpty();
        } finally {
            holder.shutdownNow();
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

    @Test
    void inProgressAtTheOnlyDelivery_consumerStopsPastItsShutdownTimeout_deadLetteredWithTheReason_notLost()
            throws Exception {
        ExecutorService holder = Executors.newSingleThreadExecutor();
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "heldstop");
                Guard guard = Guard.of(InMemoryStore.create(), "heldstop")) {
            String durable = streams.durable("held", Duration.ofSeconds(1), 1);
            CountDownLatch claimed = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            holder.submit(() -> guard.run("pay-8", () -> {
                claimed.countDown();
                release.await(WAIT.toSeconds(), TimeUnit.SECONDS);
            }));
            assertThat(claimed.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
            AtomicInteger inProgress = new AtomicInteger();
            publish(streams, "pay-8", "acc:5");
            try (IdempotentNatsConsumer consumer = IdempotentNatsConsumer.builder(nats)
                    .consumer(streams.name, durable)
                    .deadLetterSubject(streams.deadLetterSubject)
                    .retryPolicy(FAST_RETRY)
                    .shutdownTimeout(Duration.ofMillis(300))
                    .handler((key, message) -> {
                        Outcome outcome = guard.run(key, () -> {
                            throw new AssertionError("the key is held: the effect must not run here");
                        });
                        inProgress.incrementAndGet();
                        return outcome;
                    })
                    .build()
                    .start()) {
                await().atMost(WAIT).until(() -> inProgress.get() >= 2);
            }
            release.countDown();

            assertThat(streams.deadLetters()).hasSize(1);
            assertThat(streams.deadLetters().get(0).getHeaders().getFirst(IdempotentNatsConsumer.DLQ_REASON))
                    .startsWith("consumer stopped while holding the last delivery (MaxDeliver 1)");
        } finally {
            holder.shutdownNow();
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

    private static IdempotentNatsConsumer consumer(NatsFixture.Streams streams, String durable, MessageHandler handler)
            throws Exception {
        return IdempotentNatsConsumer.builder(nats)
                .consumer(streams.name, durable)
                .deadLetterSubject(streams.deadLetterSubject)
                .retryPolicy(FAST_RETRY)
                .handler(handler)
                .build()
                .start();
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
