package dev.idem.rocketmq;

import static dev.idem.rocketmq.RocketMQFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import dev.idem.testsupport.TestServers;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.junit.jupiter.api.Test;

/**
 * A handler that outlives {@code awaitTerminationMillisWhenShutdown} is interrupted by {@code shutdown()}. That is not
 * the message's failure: on its last attempt (here the only one) it must not be copied to {@code %DLQ%}; it is
 * handled by the next consumer of the group.
 */
class ShutdownInterruptTest {

    @Test
    void handlerInterruptedByShutdown_isNotDeadLettered_andIsHandledAfterwards() throws Exception {
        String topic = RocketMQFixture.topic("shutdown-interrupt", 1);
        String group = TestServers.uniquePrefix("shutdown-interrupt-group");
        RetryPolicy once = RetryPolicy.builder()
                .initialDelay(Duration.ofMillis(200))
                .maxAttempts(1)
                .jitter(0.0)
                .build();
        CountDownLatch inHandler = new CountDownLatch(1);
        DefaultMQPushConsumer first = RocketMQFixture.consumer(group, topic, group + "-first");
        IdempotentRocketMQ firstIdem = RocketMQFixture.idem(first)
                .retryPolicy(once)
                .keyFrom(KeyExtractor.keys())
                .handler((key, message) -> {
                    inHandler.countDown();
                    new CountDownLatch(1).await(); // ends only when shutdown() interrupts it
                    return Outcome.processed();
                })
                .build();
        first.setAwaitTerminationMillisWhenShutdown(300);
        first.registerMessageListener(firstIdem.concurrently());
        RocketMQFixture.start(first);
        DefaultMQProducer producer = RocketMQFixture.producer(group + "-producer");
        try {
            RocketMQFixture.send(producer, topic, "order-1:PAY", "100");
        } finally {
            producer.shutdown();
        }
        assertThat(inHandler.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
        first.shutdown();

        List<String> handled = new CopyOnWriteArrayList<>();
        DefaultMQPushConsumer second = RocketMQFixture.consumer(group, topic, group + "-second");
        second.registerMessageListener(RocketMQFixture.idem(second)
                .retryPolicy(once)
                .keyFrom(KeyExtractor.keys())
                .handler((key, message) -> {
                    handled.add(key);
                    return Outcome.processed();
                })
                .build()
                .concurrently());
        RocketMQFixture.start(second);
        try {
            await().atMost(WAIT)
                    .until(() -> !handled.isEmpty()
                            || !RocketMQFixture.deadLetters(group).isEmpty());
        } finally {
            second.shutdown();
        }
        assertThat(RocketMQFixture.deadLetters(group)).isEmpty();
        assertThat(handled).containsExactly("order-1:PAY");
    }
}
