package dev.idem.rabbitmq;

import static dev.idem.rabbitmq.RabbitFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import dev.idem.testsupport.TestServers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * What a retry copy and a dead letter keep of the delivery's headers: never the broker's routing headers ({@code CC},
 * {@code BCC}: the copy would be routed again to every queue they name) nor its dead-letter history ({@code x-death}:
 * one naming the work queue makes the broker drop the retry copy as a dead-letter cycle when its TTL ends).
 */
class CopyHeadersTest {
    private static final RetryPolicy THREE_ATTEMPTS = RabbitFixture.steadyRetry(Duration.ofMillis(50), 3);

    @ParameterizedTest
    @EnumSource(RabbitFixture.WorkQueue.class)
    void messageWithCcHeader_failingUntilTheBound_leavesOneDeadLetter_andNoCopyInTheQueueItNames(
            RabbitFixture.WorkQueue type) throws Exception {
        String audit = TestServers.uniquePrefix("audit");
        try (RabbitFixture.Queues queues = RabbitFixture.queues("ccretry", type);
                Connection connection = RabbitFixture.connect();
                Channel admin = queues.admin.createChannel()) {
            admin.queueDeclare(audit, false, false, true, null);
            queues.publish(
                    new AMQP.BasicProperties.Builder()
                            .messageId("pay-1")
                            .headers(Map.of("CC", List.of(audit)))
                            .build(),
                    "x");
            assertThat(queues.depth(audit)).as("the producer's own CC copy").isEqualTo(1);
            AtomicInteger handled = new AtomicInteger();
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .retryPolicy(THREE_ATTEMPTS)
                    .handler((key, message) -> {
                        handled.incrementAndGet();
                        return Outcome.failed("payment service down", null);
                    })
                    .build()
                    .start()) {
                await().atMost(WAIT).until(() -> queues.depth(queues.topology.deadLetterQueue()) >= 1);
            }
            assertThat(handled).hasValue(3);
            List<GetResponse> dead = queues.drain(queues.topology.deadLetterQueue());
            assertThat(dead).as("one dead letter, not one per attempt").hasSize(1);
            assertThat(dead.get(0).getProps().getHeaders()).doesNotContainKeys("CC", "BCC");
            assertThat(queues.depth(audit))
                    .as("no retry copy routed again to the queue named in CC")
                    .isEqualTo(1);
            assertThat(queues.depth(queues.queue())).isZero();
            assertThat(queues.depth(queues.topology.retryQueue())).isZero();
        }
    }

    @Test
    void messageWithBccHeaderNamingTheDeadLetterQueue_retried_leavesNoExtraDeadLetter() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("bccretry");
                Connection connection = RabbitFixture.connect()) {
            // A message delivered by the broker never carries BCC; one that arrives with it was handed to the
            // processor by a host that kept it (or forged): the copy must not be routed by it either.
            Channel channel = queues.admin.createChannel();
            queues.publish("pay-1", "x");
            GetResponse got = await().atMost(WAIT).until(() -> channel.basicGet(queues.queue(), false), r -> r != null);
            AMQP.BasicProperties withBcc = got.getProps()
                    .builder()
                    .headers(Map.of("BCC", List.of(queues.topology.deadLetterQueue())))
                    .build();
            DeliveryProcessor processor = DeliveryProcessor.builder(queues.topology)
                    .retryPolicy(THREE_ATTEMPTS)
                    .handler((key, message) -> Outcome.failed("payment service down", null))
                    .build();
            processor.process(channel, new com.rabbitmq.client.Delivery(got.getEnvelope(), withBcc, got.getBody()));
            channel.close();
            assertThat(queues.depth(queues.topology.deadLetterQueue()))
                    .as("the retry copy went to the retry queue only")
                    .isZero();
            await().atMost(WAIT).until(() -> queues.depth(queues.queue()) == 1);
        }
    }

    @ParameterizedTest
    @EnumSource(RabbitFixture.WorkQueue.class)
    void messageReplayedFromTheDeadLetterQueue_withTheBrokersXDeathNamingTheWorkQueue_isRetriedAndApplied(
            RabbitFixture.WorkQueue type) throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("xdeath", type);
                Connection connection = RabbitFixture.connect()) {
            // The broker dead-letters a message from the work queue (here: its TTL ends while no one consumes; a
            // quorum queue's x-delivery-limit does the same), writing an x-death that names the work queue ...
            queues.publish(
                    new AMQP.BasicProperties.Builder()
                            .messageId("pay-1")
                            .expiration("1")
                            .build(),
                    "x");
            await().atMost(WAIT).until(() -> queues.depth(queues.topology.deadLetterQueue()) == 1);
            GetResponse dead = queues.drain(queues.topology.deadLetterQueue()).get(0);
            assertThat(dead.getProps().getHeaders().get("x-death")).asString().contains(queues.queue());
            // ... and an operator moves it back to the work queue as it is.
            queues.publish(dead.getProps(), new String(dead.getBody(), StandardCharsets.UTF_8));
            List<String> outcomes = new CopyOnWriteArrayList<>();
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .retryPolicy(THREE_ATTEMPTS)
                    .handler((key, message) -> {
                        Outcome outcome =
                                outcomes.isEmpty() ? Outcome.failed("payment service down", null) : Outcome.processed();
                        outcomes.add(outcome.type().name());
                        return outcome;
                    })
                    .build()
                    .start()) {
                await().atMost(Duration.ofSeconds(20)).until(() -> outcomes.size() == 2);
            }
            assertThat(outcomes).containsExactly("FAILED", "PROCESSED");
            assertThat(queues.depth(queues.topology.deadLetterQueue())).isZero();
        }
    }

    @Test
    void messageWhoseProducerForgedAnXDeathNamingTheWorkQueue_isRetriedAndApplied() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("xdeathforged");
                Connection connection = RabbitFixture.connect()) {
            Map<String, Object> death = Map.of(
                    "queue",
                    queues.queue(),
                    "reason",
                    "delivery_limit",
                    "count",
                    1L,
                    "exchange",
                    "",
                    "routing-keys",
                    List.of(queues.queue()));
            queues.publish(
                    new AMQP.BasicProperties.Builder()
                            .messageId("pay-1")
                            .headers(Map.of(
                                    "x-death",
                                    List.of(death),
                                    "x-first-death-queue",
                                    queues.queue(),
                                    "x-first-death-reason",
                                    "delivery_limit",
                                    "x-first-death-exchange",
                                    ""))
                            .build(),
                    "x");
            List<String> outcomes = new CopyOnWriteArrayList<>();
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .retryPolicy(THREE_ATTEMPTS)
                    .handler((key, message) -> {
                        Outcome outcome =
                                outcomes.size() < 2 ? Outcome.outOfOrder("order not created yet") : Outcome.processed();
                        outcomes.add(outcome.type().name());
                        return outcome;
                    })
                    .build()
                    .start()) {
                await().atMost(Duration.ofSeconds(20)).until(() -> outcomes.size() == 3);
            }
            assertThat(outcomes).containsExactly("OUT_OF_ORDER", "OUT_OF_ORDER", "PROCESSED");
        }
    }
}
