package dev.idem.rabbitmq;

import static dev.idem.rabbitmq.RabbitFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import dev.idem.ConfigurationException;
import dev.idem.testsupport.TestServers;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The topology on the real server: what expires in the retry queue comes back to the work queue, headers intact. */
class RetryQueueTopologyTest {

    @Test
    void messageWithTtlInRetryQueue_comesBackToTheWorkQueue_withItsHeadersAndWithoutExpiration() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("ttlback");
                Channel channel = queues.admin.createChannel()) {
            channel.confirmSelect();
            AMQP.BasicProperties props = new AMQP.BasicProperties.Builder()
                    .messageId("k-1")
                    .headers(Map.of(DeliveryProcessor.ATTEMPTS_HEADER, 2))
                    .expiration("50")
                    .build();
            channel.basicPublish("", queues.topology.retryQueue(), true, props, "x".getBytes(StandardCharsets.UTF_8));
            channel.waitForConfirmsOrDie(10_000);

            await().atMost(WAIT).until(() -> queues.depth(queues.queue()) == 1);
            List<GetResponse> back = queues.drain(queues.queue());
            assertThat(back).hasSize(1);
            AMQP.BasicProperties got = back.get(0).getProps();
            assertThat(got.getMessageId()).isEqualTo("k-1");
            assertThat(got.getHeaders()).containsEntry(DeliveryProcessor.ATTEMPTS_HEADER, 2);
            assertThat(got.getExpiration())
                    .as("RabbitMQ drops the TTL when dead-lettering")
                    .isNull();
            assertThat(queues.depth(queues.topology.retryQueue())).isZero();
        }
    }

    @Test
    void declare_twice_isIdempotent() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("declaretwice");
                Channel channel = queues.admin.createChannel()) {
            queues.topology.declare(channel);
            queues.topology.verify(queues.admin);
        }
    }

    @Test
    void retryQueueDeclaredWithoutItsDeadLetterArguments_consumerStartIsRefused_namingTheArgumentAndTheFix()
            throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("retrynodlx");
                Connection connection = RabbitFixture.connect();
                Channel channel = queues.admin.createChannel()) {
            channel.queueDelete(queues.topology.retryQueue());
            channel.queueDeclare(queues.topology.retryQueue(), true, false, false, Map.of("x-queue-type", "quorum"));
            var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .handler((key, message) -> dev.idem.Outcome.processed())
                    .build();
            assertThatThrownBy(consumer::start)
                    .isInstanceOf(ConfigurationException.class)
                    .hasMessageContaining("queue '" + queues.topology.retryQueue() + "'")
                    .hasMessageContaining("x-dead-letter-exchange")
                    .hasMessageContaining("RabbitTopology.declare");
            assertThat(consumer.isRunning()).isFalse();
            assertThat(queues.consumers(queues.queue())).isZero();
        }
    }

    @Test
    void retryQueueDeadLetteringToAnotherQueue_verifyIsRefused() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("retryelsewhere");
                Channel channel = queues.admin.createChannel()) {
            channel.queueDelete(queues.topology.retryQueue());
            channel.queueDeclare(
                    queues.topology.retryQueue(),
                    true,
                    false,
                    false,
                    Map.of(
                            "x-queue-type", "quorum",
                            "x-dead-letter-exchange", "",
                            "x-dead-letter-routing-key", queues.topology.deadLetterQueue(),
                            "x-dead-letter-strategy", "at-least-once",
                            "x-overflow", "reject-publish"));
            assertThatThrownBy(() -> queues.topology.verify(queues.admin))
                    .isInstanceOf(ConfigurationException.class)
                    .hasMessageContaining("x-dead-letter-routing-key")
                    .hasMessageContaining(queues.queue());
        }
    }

    @Test
    void retryQueueWithoutItsDeadLetterArguments_hostedProcessorRefusesToRetryThroughIt_deliveryGoesBack()
            throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("hostnodlx")) {
            try (Channel admin = queues.admin.createChannel()) {
                admin.queueDelete(queues.topology.retryQueue());
                admin.queueDeclare(queues.topology.retryQueue(), true, false, false, Map.of("x-queue-type", "quorum"));
            }
            Channel channel = queues.admin.createChannel(); // aborted by the processor
            queues.publish("pay-1", "x");
            DeliveryProcessor processor = DeliveryProcessor.builder(queues.topology)
                    .handler((key, message) -> dev.idem.Outcome.failed("payment service down", null))
                    .build();
            GetResponse got = await().atMost(WAIT).until(() -> channel.basicGet(queues.queue(), false), r -> r != null);
            var delivery = new com.rabbitmq.client.Delivery(got.getEnvelope(), got.getProps(), got.getBody());
            assertThatThrownBy(() -> processor.process(channel, delivery))
                    .hasMessageContaining("x-dead-letter-exchange");
            assertThat(channel.isOpen()).isFalse();
            await().atMost(WAIT).until(() -> queues.depth(queues.queue()) == 1);
            assertThat(queues.depth(queues.topology.retryQueue())).isZero();
        }
    }

    @Test
    void verify_missingRetryQueue_namesItAndTheFix() throws Exception {
        RabbitTopology topology = RabbitTopology.forQueue(TestServers.uniquePrefix("missing"));
        try (Connection connection = RabbitFixture.connect()) {
            assertThatThrownBy(() -> topology.verify(connection))
                    .isInstanceOf(ConfigurationException.class)
                    .hasMessageContaining("queue '" + topology.workQueue() + "'")
                    .hasMessageContaining("RabbitTopology.declare");
        }
    }
}
