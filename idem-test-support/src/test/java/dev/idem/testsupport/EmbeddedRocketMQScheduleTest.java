package dev.idem.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
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
            delayed.setDelayTimeLevel(18); // 6 s with the embedded broker's levels
            long before = rocketmq.scheduledPending();

            RocketMQSend.toQueue(producer, delayed, 0);

            // seen pending while not yet in its topic at some moment of its 6 s, however late the broker files it
            AtomicBoolean seenPending = new AtomicBoolean();
            await().atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(20))
                    .until(() -> {
                        if (rocketmq.scheduledPending() == before + 1 && rocketmq.endOffset(topic, 0) == 0) {
                            seenPending.set(true);
                        }
                        return rocketmq.endOffset(topic, 0) == 1;
                    });
            assertThat(seenPending).isTrue();
            await().atMost(Duration.ofSeconds(30)).until(() -> rocketmq.scheduledPending() == before);
        } finally {
            producer.shutdown();
        }
    }
}
