package dev.idem.rocketmq;

import static dev.idem.rocketmq.RocketMQFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Guard;
import dev.idem.InMemoryStore;
import dev.idem.spi.IdempotencyStore;
import dev.idem.testsupport.ReadmeSnippets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.junit.jupiter.api.Test;

/** The example of {@code docs/rocketmq.md}, compiled and run against the in-process broker. */
class ReadmeRocketMQExampleTest {
    private final List<String> charges = new CopyOnWriteArrayList<>();

    @Test
    void docsExample_aResentPayment_isChargedOnce() throws Exception {
        String topic = RocketMQFixture.topic("docs", 1);
        String group = topic + "-payments";
        RocketMQFixture.broker().createGroupTopics(group);
        String nameServer = RocketMQFixture.broker().nameServer();
        IdempotencyStore store = InMemoryStore.create();

        // readme:rocketmq begin
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(nameServer);
        consumer.subscribe(topic, "*");
        Guard guard = Guard.builder(store)
                .namespace("payments")
                .lease(Duration.ofSeconds(30))
                .build();

        IdempotentRocketMQ idem = IdempotentRocketMQ.builder(consumer)
                .keyFrom(KeyExtractor.keys()) // the producer's business key, e.g. "10086:PAY"
                .handler((key, message) -> guard.run(key, () -> charge(message.getBody())))
                .lease(Duration.ofSeconds(30), true) // the guard's lease and watchdog, checked against consumeTimeout
                .build();
        consumer.registerMessageListener(idem.concurrently());
        consumer.start();
        // readme:rocketmq end

        DefaultMQProducer producer = RocketMQFixture.producer(group + "-p");
        try {
            RocketMQFixture.send(producer, topic, "10086:PAY", "10086:100");
            RocketMQFixture.send(producer, topic, "10086:PAY", "10086:100");
            await().atMost(WAIT).until(() -> RocketMQFixture.consumedAll(consumer, topic, 1));
        } finally {
            consumer.shutdown();
            producer.shutdown();
            guard.close();
        }
        assertThat(charges).containsExactly("10086:100");
        ReadmeSnippets.assertShown(
                Path.of("src/test/java/dev/idem/rocketmq/ReadmeRocketMQExampleTest.java"), "rocketmq");
    }

    @Test
    void docsProducer_recommendedSettings_businessKeyInKeysAndInTheKeyProperty() {
        String topic = "payments";
        String orderId = "10086";
        byte[] body = "10086:100".getBytes(java.nio.charset.StandardCharsets.UTF_8);
        // readme:rocketmq-producer begin
        DefaultMQProducer producer =
                RocketMQProducers.applyRecommendedSettings(new DefaultMQProducer("payments-producer"));
        Message message = new Message(topic, body);
        message.setKeys(orderId + ":PAY"); // the business key, read by KeyExtractor.keys(), or:
        RocketMQProducers.withKey(message, orderId + ":PAY"); // for KeyExtractor.property(KEY_PROPERTY)
        // readme:rocketmq-producer end
        assertThat(producer.getSendMsgMaxTimeoutPerRequest()).isEqualTo(3000);
        assertThat(producer.getRetryTimesWhenSendFailed()).isEqualTo(2);
        assertThat(message.getKeys()).isEqualTo("10086:PAY");
        assertThat(RocketMQProducers.key(message)).contains("10086:PAY");
        ReadmeSnippets.assertShown(
                Path.of("src/test/java/dev/idem/rocketmq/ReadmeRocketMQExampleTest.java"), "rocketmq-producer");
    }

    private void charge(byte[] body) {
        charges.add(new String(body, java.nio.charset.StandardCharsets.UTF_8));
    }
}
