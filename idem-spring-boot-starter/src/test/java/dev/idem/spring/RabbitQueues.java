package dev.idem.spring;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.idem.testsupport.TestServers;
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;
import org.springframework.amqp.core.MessageProperties;

/** What the Rabbit tests do on the local RabbitMQ besides the application: publish, and count what a queue holds. */
final class RabbitQueues {
    private RabbitQueues() {}

    static Connection connection() throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(TestServers.rabbitmq().url());
        return factory.newConnection("idem-spring-rabbit-test");
    }

    /**
     * Publishes a persistent text message with {@code id} as its message id ({@code null}: none), and waits for the
     * broker's confirm: RabbitMQ 3.10 drops the last unconfirmed publishes to a quorum queue when their channel closes
     * at once (8 of 40 in one of 60 closes on a loaded machine), which read as messages the consumer lost.
     */
    static void publish(Channel channel, String queue, @Nullable String id, String body) throws Exception {
        AMQP.BasicProperties properties = new AMQP.BasicProperties.Builder()
                .messageId(id)
                .contentType(MessageProperties.CONTENT_TYPE_TEXT_PLAIN)
                .deliveryMode(2)
                .build();
        if (channel.getNextPublishSeqNo() == 0) {
            channel.confirmSelect();
        }
        channel.basicPublish("", queue, properties, body.getBytes(StandardCharsets.UTF_8));
        channel.waitForConfirmsOrDie(30_000);
    }

    /** {@link #publish(Channel, String, String, String)} on a connection of its own. */
    static void publish(String queue, @Nullable String id, String body) throws Exception {
        try (Connection c = connection();
                Channel channel = c.createChannel()) {
            publish(channel, queue, id, body);
        }
    }

    /** The messages ready in {@code queue}. */
    static long ready(String queue) throws Exception {
        try (Connection c = connection();
                Channel channel = c.createChannel()) {
            return channel.messageCount(queue);
        }
    }
}
