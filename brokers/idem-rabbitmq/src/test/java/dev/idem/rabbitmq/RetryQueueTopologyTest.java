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
