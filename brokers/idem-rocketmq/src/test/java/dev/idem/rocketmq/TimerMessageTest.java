package dev.idem.rocketmq;

import static dev.idem.rocketmq.RocketMQFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.DeadLetterException;
import dev.idem.Outcome;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.junit.jupiter.api.Test;

/**
 * Messages the producer scheduled (RocketMQ 5's timer, {@code setDeliverTimeMs}, and the delay level {@code DELAY}):
 * their retry and dead-letter copies carry the message's properties, and must neither be refused nor scheduled again
 * for the producer's time.
 */
class TimerMessageTest {

    @Test
    void scheduledMessages_waitedFor_andRejected_areRetriedAndDeadLetteredLikeAnyOther() {
        String topic = RocketMQFixture.topic("timer", 1);
        String group = topic + "-g";
        List<String> seen = new CopyOnWriteArrayList<>();
        DefaultMQPushConsumer consumer = RocketMQFixture.consumer(group, topic, group);
        DefaultMQProducer producer = RocketMQFixture.producer(group + "-p");
        try {
            consumer.registerMessageListener(RocketMQFixture.idem(consumer)
                    .keyFrom(KeyExtractor.keys())
                    .handler((key, message) -> {
                        seen.add(key);
                        if (key.startsWith("reject")) {
                            throw new DeadLetterException("not a valid order", null);
                        }
                        long tries = seen.stream().filter(key::equals).count();
                        return tries <= 2 ? Outcome.inProgress("held elsewhere", null) : Outcome.processed();
                    })
                    .build()
                    .concurrently());
            RocketMQFixture.start(consumer);
            Message timer = message(topic, "timer-1");
            timer.setDeliverTimeMs(System.currentTimeMillis() + 1000);
            RocketMQFixture.send(producer, timer);
            Message delayed = message(topic, "delay-1");
            delayed.setDelayTimeLevel(1);
            RocketMQFixture.send(producer, delayed);
            Message rejectTimer = message(topic, "reject-timer");
            rejectTimer.setDeliverTimeMs(System.currentTimeMillis() + 1000);
            RocketMQFixture.send(producer, rejectTimer);
            await().atMost(WAIT)
                    .until(() -> seen.stream().filter("timer-1"::equals).count() == 3
                            && seen.stream().filter("delay-1"::equals).count() == 3
                            && RocketMQFixture.deadLetters(group).size() == 1);
        } finally {
            consumer.shutdown();
            producer.shutdown();
        }
        assertThat(RocketMQFixture.deadLetters(group))
                .extracting(m -> m.getKeys())
                .containsExactly("reject-timer");
    }

    private static Message message(String topic, String key) {
        Message message = new Message(topic, key.getBytes(StandardCharsets.UTF_8));
        message.setKeys(key);
        return message;
    }
}
