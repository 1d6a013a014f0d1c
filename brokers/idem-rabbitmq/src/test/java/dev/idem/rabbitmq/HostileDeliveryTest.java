package dev.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import com.rabbitmq.client.impl.LongStringHelper;
import dev.idem.Guard;
import dev.idem.InMemoryStore;
import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Messages a hostile or careless producer sends, and reasons a handler makes too long: each ends in one dead letter
 * with a reason, never in a redelivery loop (the channel aborted on every attempt) and never in an ack alone.
 */
class HostileDeliveryTest {
    /** Long enough for a few redeliveries if the message loops; a dead letter takes milliseconds. */
    private static final Duration SETTLED = Duration.ofSeconds(10);

    @Test
    void attemptCountsSetByTheProducer_areNotTheAdapters_theMessageGetsItsWholeBound() throws Exception {
        RetryPolicy threeAttempts = RabbitFixture.steadyRetry(Duration.ofMillis(20), 3);
        try (RabbitFixture.Queues queues = RabbitFixture.queues("attemptsmax");
                Connection connection = RabbitFixture.connect()) {
            queues.publish(
                    new AMQP.BasicProperties.Builder()
                            .messageId("pay-1")
                            .headers(Map.of(
                                    DeliveryProcessor.ATTEMPTS_HEADER, Integer.MAX_VALUE,
                                    CopyProperties.WAITS_HEADER, Integer.MAX_VALUE))
                            .build(),
                    "x");
            AtomicInteger handled = new AtomicInteger();
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .retryPolicy(threeAttempts)
                    .handler((key, message) -> {
                        handled.incrementAndGet();
                        return Outcome.failed("payment service down", null);
                    })
                    .build()
                    .start()) {
                await().atMost(SETTLED).until(() -> queues.depth(queues.topology.deadLetterQueue()) == 1);
            }
            GetResponse dead = queues.drain(queues.topology.deadLetterQueue()).get(0);
            assertThat(dead.getProps().getHeaders().get(DeliveryProcessor.DLQ_REASON))
                    .asString()
                    .startsWith("gave up after 3 attempts");
            assertThat(dead.getProps().getHeaders())
                    .as("a replay starts with the whole bound")
                    .doesNotContainKeys(DeliveryProcessor.ATTEMPTS_HEADER, CopyProperties.WAITS_HEADER);
            assertThat(handled).hasValue(3);
            assertThat(queues.depth(queues.queue())).isZero();
        }
    }

    /**
     * A handler that returns null (a bug) is a counted failure: retried to the bound, then dead-lettered with the
     * reason. (It threw out of the processor: the channel was aborted and the message handed out again, for ever.)
     */
    @Test
    void handlerReturningNull_isRetriedToTheBound_thenDeadLetteredWithTheReason() throws Exception {
        RetryPolicy twoAttempts = RabbitFixture.steadyRetry(Duration.ofMillis(20), 2);
        try (RabbitFixture.Queues queues = RabbitFixture.queues("nulloutcome");
                Connection connection = RabbitFixture.connect()) {
            queues.publish("pay-1", "x");
            AtomicInteger handled = new AtomicInteger();
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .retryPolicy(twoAttempts)
                    .handler((key, message) -> {
                        handled.incrementAndGet();
                        return null;
                    })
                    .build()
                    .start()) {
                await().atMost(SETTLED).until(() -> queues.depth(queues.topology.deadLetterQueue()) == 1);
            }
            GetResponse dead = queues.drain(queues.topology.deadLetterQueue()).get(0);
            assertThat(dead.getProps().getHeaders().get(DeliveryProcessor.DLQ_REASON))
                    .asString()
                    .startsWith("gave up after 2 attempts")
                    .contains("must return an Outcome, not null");
            assertThat(handled).hasValue(2);
            assertThat(queues.depth(queues.queue())).isZero();
        }
    }

    /**
     * Headers that leave the retry copy just inside {@code frame_max}: the broker adds its {@code x-death} history on
     * the way back from the retry queue, and the copy must still reach the consumer (handled again, or dead-lettered
     * with the reason), never block the queue or the connection.
     */
    @Test
    void retryCopyJustInsideAFrame_theBrokersHistoryOnTheWayBack_stillHandledOrDeadLettered() throws Exception {
        RetryPolicy fast = RabbitFixture.steadyRetry(Duration.ofMillis(20), 3);
        try (RabbitFixture.Queues queues = RabbitFixture.queues("edgeframe");
                Connection connection = RabbitFixture.connect()) {
            int frameMax = connection.getFrameMax();
            byte[] body = "x".getBytes(java.nio.charset.StandardCharsets.UTF_8);
            AMQP.BasicProperties props = null;
            for (int pad = frameMax - 400; pad > 0; pad--) {
                props = new AMQP.BasicProperties.Builder()
                        .messageId("pay-1")
                        .headers(Map.of("pad", new byte[pad]))
                        .build();
                AMQP.BasicProperties copy =
                        CopyProperties.retryCopy(props, new dev.idem.spi.Attempts(1, 0), Duration.ofMillis(20));
                if (copy.toFrame(1, body.length).size() <= frameMax - 8) {
                    break;
                }
            }
            queues.publish(props, "x");
            List<Boolean> handled = new CopyOnWriteArrayList<>();
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .retryPolicy(fast)
                    .handler((key, message) -> {
                        handled.add(true);
                        return handled.size() == 1 ? Outcome.failed("payment service down", null) : Outcome.processed();
                    })
                    .build()
                    .start()) {
                await().atMost(RabbitFixture.WAIT)
                        .until(() -> handled.size() == 2 || queues.depth(queues.topology.deadLetterQueue()) == 1);
                assertThat(consumer.isRunning()).isTrue();
            }
            assertThat(queues.depth(queues.queue())).isZero();
            assertThat(queues.depth(queues.topology.retryQueue())).isZero();
        }
    }

    /**
     * A handler (or a business guard computing "lease end minus now" a moment late) answers {@code IN_PROGRESS} with a
     * retry-after in the past: the copy comes back at once. (Its negative TTL, {@code expiration "-5"}, made the broker
     * close the channel: the message was handed out again for ever.)
     */
    @Test
    void inProgressWithARetryAfterInThePast_comesBackAtOnceThroughTheRetryQueue() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("pastretry");
                Connection connection = RabbitFixture.connect()) {
            queues.publish("pay-1", "x");
            List<Boolean> redelivered = new CopyOnWriteArrayList<>();
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .handler((key, message) -> {
                        redelivered.add(message.getEnvelope().isRedeliver());
                        return redelivered.size() == 1
                                ? Outcome.inProgress("lease ended a moment ago", Duration.ofMillis(-5))
                                : Outcome.processed();
                    })
                    .build()
                    .start()) {
                await().atMost(SETTLED).until(() -> redelivered.size() == 2 && queues.depth(queues.queue()) == 0);
                assertThat(consumer.isRunning()).isTrue();
            }
            assertThat(redelivered)
                    .as("back through the retry queue, not handed out again")
                    .containsExactly(false, false);
            assertThat(queues.depth(queues.topology.retryQueue())).isZero();
        }
    }

    @Test
    void rejectedWithAReasonLargerThanAFrame_isDeadLetteredWithTheReasonCut() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("hugereason");
                Connection connection = RabbitFixture.connect()) {
            queues.publish("pay-1", "x");
            String reason = "amount invalid: " + "9".repeat(connection.getFrameMax());
            AtomicInteger handled = new AtomicInteger();
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .handler((key, message) -> {
                        handled.incrementAndGet();
                        return Outcome.rejected(reason);
                    })
                    .build()
                    .start()) {
                await().atMost(SETTLED).until(() -> queues.depth(queues.topology.deadLetterQueue()) == 1);
            }
            GetResponse dead = queues.drain(queues.topology.deadLetterQueue()).get(0);
            assertThat(dead.getProps().getHeaders().get(DeliveryProcessor.DLQ_REASON))
                    .asString()
                    .startsWith("amount invalid: 999")
                    .hasSizeLessThan(2_000);
            assertThat(handled).hasValue(1);
        }
    }

    @Test
    void headersThatLeaveNoRoomForTheCopy_deadLetteredWithoutThem_andTheReasonSaysSo() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("hugeheaders");
                Connection connection = RabbitFixture.connect()) {
            String filler = "f".repeat(connection.getFrameMax() - 200); // the original fits in one frame, a copy not
            queues.publish(
                    new AMQP.BasicProperties.Builder()
                            .messageId("pay-1")
                            .headers(Map.of("trace", filler))
                            .build(),
                    "x");
            AtomicInteger handled = new AtomicInteger();
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .handler((key, message) -> {
                        handled.incrementAndGet();
                        return Outcome.rejected("currency XYZ is not supported");
                    })
                    .build()
                    .start()) {
                await().atMost(SETTLED).until(() -> queues.depth(queues.topology.deadLetterQueue()) == 1);
            }
            GetResponse dead = queues.drain(queues.topology.deadLetterQueue()).get(0);
            Map<String, Object> headers = dead.getProps().getHeaders();
            assertThat(headers.get(DeliveryProcessor.DLQ_REASON))
                    .asString()
                    .startsWith("currency XYZ is not supported")
                    .contains("frame");
            assertThat(headers).doesNotContainKey("trace");
            assertThat(dead.getProps().getMessageId()).isEqualTo("pay-1");
            assertThat(handled).hasValue(1);
            assertThat(queues.depth(queues.queue())).isZero();
            assertThat(queues.depth(queues.topology.retryQueue())).isZero();
        }
    }

    @Test
    void headerKeysWhoseBytesDifferOnlyInInvalidUtf8_areTwoKeys_bothApplied() throws Exception {
        try (Guard guard = Guard.of(InMemoryStore.create(), "binarykeys");
                RabbitFixture.Queues queues = RabbitFixture.queues("binarykeys");
                Connection connection = RabbitFixture.connect()) {
            Object[] keys = {
                new byte[] {'k', (byte) 0x80},
                new byte[] {'k', (byte) 0x81}, // field type 'x', byte array
                LongStringHelper.asLongString(new byte[] {'l', (byte) 0xC3}), // field type 'S', long string
                LongStringHelper.asLongString(new byte[] {'l', (byte) 0xC4})
            };
            for (Object key : keys) {
                queues.publish(
                        new AMQP.BasicProperties.Builder()
                                .headers(Map.of("idem-key", key))
                                .build(),
                        "x");
            }
            Set<String> applied = ConcurrentHashMap.newKeySet();
            List<Outcome.Type> outcomes = new CopyOnWriteArrayList<>();
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .keyFrom(KeyExtractor.header("idem-key"))
                    .handler((key, message) -> {
                        Outcome outcome = guard.run(key, () -> applied.add(key));
                        outcomes.add(outcome.type());
                        return outcome;
                    })
                    .build()
                    .start()) {
                await().atMost(SETTLED).until(() -> outcomes.size() == 4);
            }
            assertThat(outcomes).containsOnly(Outcome.Type.PROCESSED);
            assertThat(applied).containsExactlyInAnyOrder("hex:6b80", "hex:6b81", "hex:6cc3", "hex:6cc4");
        }
    }

    @Test
    void messageIdThatTheClientCouldNotDecodeExactly_isDeadLetteredWithTheReason_neverHandled() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("badmessageid");
                Connection connection = RabbitFixture.connect()) {
            // What amqp-client makes of a message-id whose bytes are not UTF-8: U+FFFD for every bad sequence.
            queues.publish("pay-\uFFFD", "x");
            AtomicInteger handled = new AtomicInteger();
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .handler((key, message) -> {
                        handled.incrementAndGet();
                        return Outcome.processed();
                    })
                    .build()
                    .start()) {
                await().atMost(SETTLED).until(() -> queues.depth(queues.topology.deadLetterQueue()) == 1);
            }
            GetResponse dead = queues.drain(queues.topology.deadLetterQueue()).get(0);
            assertThat(dead.getProps().getHeaders().get(DeliveryProcessor.DLQ_REASON))
                    .asString()
                    .contains("message-id")
                    .contains("UTF-8");
            assertThat(handled).hasValue(0);
        }
    }

    @Test
    void workQueueDeletedUnderTheConsumer_itStopsAndSaysWhy() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("deleted");
                Connection connection = RabbitFixture.connect();
                var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                        .handler((key, message) -> Outcome.processed())
                        .build()
                        .start()) {
            try (var admin = queues.admin.createChannel()) {
                admin.queueDelete(queues.queue());
            }
            await().atMost(SETTLED).until(() -> consumer.failure().isPresent());
            assertThat(consumer.failure())
                    .get()
                    .asString()
                    .contains("cancelled")
                    .contains(queues.queue());
            assertThat(consumer.isRunning()).isFalse();
        }
    }
}
