package dev.idem.rocketmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.junit.jupiter.api.Test;

/**
 * RocketMQ separates properties with U+0001 and U+0002 and does not escape them: a key holding U+0002 reaches the
 * consumer cut at it, so {@code order\u00021:PAY} and {@code order\u00022:PAY} both arrive as {@code order} and the
 * second would be answered DUPLICATE without its effect. The consumer cannot tell (the rest is dropped by the
 * decoder); the recommended producer refuses to send such a message, with the reason.
 */
class HostileKeyTest {

    @Test
    void keysHoldingRocketMQsPropertySeparators_areRefusedByTheRecommendedProducer_andNothingIsStored()
            throws Exception {
        String topic = RocketMQFixture.topic("hostile-key", 1);
        DefaultMQProducer producer = RocketMQFixture.producer(topic + "-p");
        try {
            for (String key : List.of("order\u00021:PAY", "\u0002order-2:PAY")) {
                Message message = new Message(topic, key.getBytes(StandardCharsets.UTF_8));
                message.setKeys(key);
                assertThatThrownBy(() -> producer.send(message))
                        .isInstanceOf(MQClientException.class)
                        .rootCause()
                        .hasMessageContaining("property 'KEYS' holds U+0002")
                        .hasMessageContaining("a separator RocketMQ does not escape");
            }
        } finally {
            producer.shutdown();
        }
        assertThat(RocketMQFixture.broker().endOffset(topic, 0)).isZero();
    }

    @Test
    void withKey_refusesAKeyHoldingAPropertySeparator() {
        Message message = new Message("payments", new byte[0]);
        assertThatThrownBy(() -> RocketMQProducers.withKey(message, "order\u00021:PAY"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("the idempotency key holds U+0002 at index 5");
        assertThat(message.getUserProperty(RocketMQProducers.KEY_PROPERTY)).isNull();
    }
}
