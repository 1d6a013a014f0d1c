package dev.idem.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.junit.jupiter.api.Test;

/**
 * A message held back for a delay level counts as pending until the broker puts it into its topic: what tells a lab
 * that a retry sent back with a delay is still on its way after the delay ended (the broker delivers late when loaded).
 */
class EmbeddedRocketMQScheduleTest {

    @Test
    void aDelayedMessage_isPending_untilTheBrokerPutsItIntoItsTopic() throws Exception {
        EmbeddedRocketMQ rocketmq = EmbeddedRocketMQ.shared();
        String topic = TestServers.uniquePrefix("delayed");
        rocketmq.createTopic(topic, 1);
        DefaultMQProducer producer = new DefaultMQProducer(topic + "-producer");
        producer.setNamesrvAddr(rocketmq.nameServer());
        producer.start();
        try {
            Message delayed = new Message(topic, "later".getBytes(StandardCharsets.UTF_8));
            delayed.setDelayTimeLevel(10); // 4 s with the embedded broker's levels
            long before = rocketmq.scheduledPending();

            RocketMQSend.toQueue(producer, delayed, 0);

            // the broker files it in the schedule topic's queue in the background: seen there before its 4 s end
            await().atMost(Duration.ofSeconds(3)).until(() -> rocketmq.scheduledPending() == before + 1);
            assertThat(rocketmq.endOffset(topic, 0)).isZero();
            await().atMost(Duration.ofSeconds(30)).until(() -> rocketmq.endOffset(topic, 0) == 1);
            await().atMost(Duration.ofSeconds(5)).until(() -> rocketmq.scheduledPending() == before);
        } finally {
            producer.shutdown();
        }
    }
}
