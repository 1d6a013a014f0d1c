package dev.idem.rocketmq;

import static dev.idem.rocketmq.RocketMQFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.DeadLetterException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;

/**
 * A message whose properties are close to RocketMQ's limit for them (32,767 bytes, checked by the broker): its
 * dead-letter copy adds the reason and the listener's properties, and a copy over the limit is refused by the broker
 * on every try, so the message would be retried for ever and never reach {@code %DLQ%}. The reason is shortened to
 * what fits.
 */
class LargePropertiesTest {

    @Test
    void rejectedMessage_withPropertiesNearTheLimit_isDeadLetteredWithItsReasonShortened() {
        String topic = RocketMQFixture.topic("bigprops", 1);
        String group = topic + "-g";
        DefaultMQPushConsumer consumer = RocketMQFixture.consumer(group, topic, group);
        DefaultMQProducer producer = RocketMQFixture.producer(group + "-p");
        try {
            consumer.registerMessageListener(RocketMQFixture.idem(consumer)
                    .keyFrom(KeyExtractor.keys())
                    .handler((key, message) -> {
                        throw new DeadLetterException("amount is not a number: " + "x".repeat(2000), null);
                    })
                    .build()
                    .concurrently());
            Message message = new Message(topic, "pay".getBytes(StandardCharsets.UTF_8));
            message.setKeys("10086:PAY");
            message.putUserProperty("TRACE", "t".repeat(32_000));
            RocketMQFixture.send(producer, message);
            RocketMQFixture.start(consumer);
            await().atMost(WAIT).until(() -> RocketMQFixture.deadLetters(group).size() == 1);
        } finally {
            consumer.shutdown();
            producer.shutdown();
        }
        List<MessageExt> dead = RocketMQFixture.deadLetters(group);
        assertThat(dead.get(0).getUserProperty(IdempotentRocketMQ.DLQ_REASON)).startsWith("amount is not a number");
        assertThat(dead.get(0).getUserProperty("TRACE")).hasSize(32_000);
        assertThat(dead.get(0).getUserProperty(IdempotentRocketMQ.DLQ_OUTCOME)).isEqualTo("REJECTED");
    }
}
