package dev.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import dev.idem.Outcome;
import java.time.Duration;
import java.util.Map;
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
    void attemptsHeaderTamperedToIntMax_isDeadLetteredAsExhausted() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("attemptsmax");
                Connection connection = RabbitFixture.connect()) {
            queues.publish(
                    new AMQP.BasicProperties.Builder()
                            .messageId("pay-1")
                            .headers(Map.of(DeliveryProcessor.ATTEMPTS_HEADER, Integer.MAX_VALUE))
                            .build(),
                    "x");
            AtomicInteger handled = new AtomicInteger();
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .retryPolicy(RabbitFixture.FAST_RETRY)
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
                    .startsWith("gave up after ");
            assertThat(handled).hasValue(1);
            assertThat(queues.depth(queues.queue())).isZero();
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
