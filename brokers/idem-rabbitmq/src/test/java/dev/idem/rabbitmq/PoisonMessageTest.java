package dev.idem.rabbitmq;

import static dev.idem.rabbitmq.RabbitFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.GetResponse;
import dev.idem.DeadLetterException;
import dev.idem.Delivery;
import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import dev.idem.jdbc.JdbcInbox;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Poison messages: a message the handler can never apply goes to the dead-letter queue with the reason, once, and is
 * never acked as processed. The handler here debits and then finds the payment invalid.
 */
class PoisonMessageTest {
    static RabbitFixture.Bank bank;

    @BeforeAll
    static void setUp() {
        bank = new RabbitFixture.Bank("PoisonMessageTest");
    }

    @AfterAll
    static void tearDown() {
        bank.close();
    }

    @Test
    void poison_unguardedConsumerRequeuesIt_andDebitsOnEveryDelivery() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("poisonunguarded");
                Connection connection = RabbitFixture.connect();
                Channel channel = connection.createChannel()) {
            String account = queues.queue() + "-acc";
            bank.open(account, 1000);
            queues.publish("pay-bad", account + ":100");
            AtomicInteger deliveries = new AtomicInteger();
            channel.basicQos(1);
            channel.basicConsume(queues.queue(), false, new DefaultConsumer(channel) {
                @Override
                public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties props, byte[] body)
                        throws IOException {
                    try {
                        bank.debit(account, 100, props.getMessageId());
                        if (deliveries.incrementAndGet() >= 3) {
                            channel.basicAck(envelope.getDeliveryTag(), false); // end the demonstration
                        } else {
                            throw new IllegalArgumentException("currency XYZ is not supported");
                        }
                    } catch (Exception e) {
                        channel.basicNack(envelope.getDeliveryTag(), false, true);
                    }
                }
            });
            await().atMost(WAIT).until(() -> deliveries.get() >= 3);
            assertThat(bank.ledgerRows(account))
                    .as("a debit per delivery of the poison message")
                    .isEqualTo(3);
            assertThat(queues.depth(queues.topology.deadLetterQueue())).isZero();
        }
    }

    @Test
    void poison_guardedByInbox_rolledBack_deadLetteredOnceWithTheReason() throws Exception {
        JdbcInbox inbox = JdbcInbox.builder(bank.database().dataSource())
                .namespace("poison")
                .createTableIfMissing(true)
                .build();
        try (RabbitFixture.Queues queues = RabbitFixture.queues("poisonguarded");
                Connection connection = RabbitFixture.connect()) {
            String account = queues.queue() + "-acc";
            bank.open(account, 1000);
            queues.publish("pay-bad", account + ":100");
            AtomicInteger handled = new AtomicInteger();
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .retryPolicy(RabbitFixture.FAST_RETRY)
                    .handler((key, message) -> inbox.handle(Delivery.of(key), c -> {
                        handled.incrementAndGet();
                        bank.debit(c, account, 100, key);
                        throw new DeadLetterException("currency XYZ is not supported", null);
                    }))
                    .build()
                    .start()) {
                await().atMost(WAIT).until(() -> queues.depth(queues.topology.deadLetterQueue()) == 1);
            }
            GetResponse dead = queues.drain(queues.topology.deadLetterQueue()).get(0);
            Map<String, Object> headers = dead.getProps().getHeaders();
            assertThat(headers.get(DeliveryProcessor.DLQ_REASON)).asString().isEqualTo("currency XYZ is not supported");
            assertThat(headers.get(DeliveryProcessor.DLQ_OUTCOME)).asString().isEqualTo("REJECTED");
            assertThat(headers.get(DeliveryProcessor.DLQ_QUEUE)).asString().isEqualTo(queues.queue());
            assertThat(dead.getProps().getMessageId()).isEqualTo("pay-bad");
            assertThat(RabbitFixture.text(dead.getBody())).isEqualTo(account + ":100");
            assertThat(handled).hasValue(1);
            assertThat(bank.ledgerRows(account))
                    .as("the debit rolled back with the rejection")
                    .isZero();
            assertThat(queues.depth(queues.queue())).isZero();
        }
    }

    @Test
    void messageWithoutKey_isDeadLetteredWithTheReason_handlerNeverRuns() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("nokey");
                Connection connection = RabbitFixture.connect()) {
            queues.publish(new AMQP.BasicProperties.Builder().build(), "no id");
            AtomicInteger handled = new AtomicInteger();
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .handler((key, message) -> {
                        handled.incrementAndGet();
                        return Outcome.processed();
                    })
                    .build()
                    .start()) {
                await().atMost(WAIT).until(() -> queues.depth(queues.topology.deadLetterQueue()) == 1);
            }
            GetResponse dead = queues.drain(queues.topology.deadLetterQueue()).get(0);
            assertThat(dead.getProps().getHeaders().get(DeliveryProcessor.DLQ_REASON))
                    .asString()
                    .contains("no idempotency key: the message-id property is missing");
            assertThat(handled).hasValue(0);
        }
    }

    @Test
    void failingHandler_retriedWithBackoff_deadLetteredAfterMaxAttempts_withTheLastReason() throws Exception {
        RetryPolicy threeAttempts = RetryPolicy.builder()
                .initialDelay(Duration.ofMillis(50))
                .multiplier(2.0)
                .maxDelay(Duration.ofMillis(200))
                .maxAttempts(3)
                .jitter(0.0)
                .build();
        try (RabbitFixture.Queues queues = RabbitFixture.queues("giveup");
                Connection connection = RabbitFixture.connect()) {
            queues.publish("pay-1", "x");
            List<Object> attemptsSeen = new java.util.concurrent.CopyOnWriteArrayList<>();
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .retryPolicy(threeAttempts)
                    .handler((key, message) -> {
                        Map<String, Object> h = message.getProperties().getHeaders();
                        attemptsSeen.add(h == null ? "none" : h.get(DeliveryProcessor.ATTEMPTS_HEADER));
                        throw new IllegalStateException("payment service down");
                    })
                    .build()
                    .start()) {
                await().atMost(WAIT).until(() -> queues.depth(queues.topology.deadLetterQueue()) == 1);
            }
            GetResponse dead = queues.drain(queues.topology.deadLetterQueue()).get(0);
            Map<String, Object> headers = dead.getProps().getHeaders();
            assertThat(headers.get(DeliveryProcessor.DLQ_REASON))
                    .asString()
                    .startsWith("gave up after 3 attempts; last: handler threw java.lang.IllegalStateException")
                    .contains("payment service down");
            assertThat(headers.get(DeliveryProcessor.DLQ_OUTCOME)).asString().isEqualTo("FAILED");
            assertThat(headers.get(DeliveryProcessor.DLQ_ATTEMPTS)).isEqualTo(3);
            assertThat(attemptsSeen).containsExactly("none", 1, 2);
            assertThat(queues.depth(queues.queue())).isZero();
            assertThat(queues.depth(queues.topology.retryQueue())).isZero();
        }
    }
}
