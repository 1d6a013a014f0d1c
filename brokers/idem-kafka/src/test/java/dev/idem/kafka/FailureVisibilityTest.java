package dev.idem.kafka;

import static dev.idem.kafka.KafkaFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Outcome;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** A runner that cannot go on says so; it never sits paused while claiming to run. */
class FailureVisibilityTest {

    /**
     * Issue 14 item 4: an exception escaping the batch (here the user's dead-letter topic function) left the partition
     * paused forever while {@code isRunning()} said true.
     */
    @ParameterizedTest
    @ValueSource(strings = {"classic", "consumer"})
    void deadLetterTopicFunctionThrowing_stopsTheRunnerVisibly_afterCommittingWhatIsFinal(String protocol)
            throws Exception {
        String topic = KafkaFixture.topic("dltthrows", 1);
        String group = topic + "-g";
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            KafkaFixture.send(producer, topic, 0, "pay-1", "v");
            KafkaFixture.send(producer, topic, 0, "pay-2", "v");
        }
        AtomicInteger topicCalls = new AtomicInteger();
        var consumer = IdempotentKafkaConsumer.builder(KafkaFixture.consumerProps(group, protocol))
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .deadLetterTopic(source -> {
                    if (topicCalls.incrementAndGet() > 1) { // the first call is the start-up check
                        throw new IllegalStateException("no dead-letter route for " + source);
                    }
                    return source + "-dlt";
                })
                .handler((key, record) -> key.equals("pay-2") ? Outcome.rejected("bad") : Outcome.processed())
                .build()
                .start();
        try {
            assertThat(consumer.awaitTermination(WAIT)).isTrue();
            assertThat(consumer.isRunning()).isFalse();
            assertThat(consumer.failure()).get().asString().contains("no dead-letter route");
            assertThat(consumer.health().state()).isEqualTo(Health.State.FAILED);
            assertThat(KafkaFixture.committed(group)
                            .get(new TopicPartition(topic, 0))
                            .offset())
                    .as("pay-1 finished and was committed; pay-2 was not")
                    .isEqualTo(1L);
        } finally {
            consumer.close();
        }
    }

    @Test
    void batchHandlerAnsweringTheWrongNumberOfOutcomes_stopsTheRunnerVisibly() throws Exception {
        String topic = KafkaFixture.topic("batchsize", 1);
        KafkaFixture.sendMany(topic, "pay-", 3);
        var consumer = IdempotentKafkaConsumer.builder(KafkaFixture.consumerProps(topic + "-g"))
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .batchHandler(batch -> List.of(Outcome.processed()), 10)
                .build()
                .start();
        try {
            assertThat(consumer.awaitTermination(WAIT)).isTrue();
            assertThat(consumer.failure()).get().asString().contains("must answer one non-null Outcome per record");
        } finally {
            consumer.close();
        }
    }

    /**
     * Issue 14 item 6: a hung handler pinned its partition forever. Past the handler timeout it is interrupted, the
     * health says STALLED while it has not returned, and the record is retried once it has.
     */
    @ParameterizedTest
    @ValueSource(strings = {"classic", "consumer"})
    void handlerPastItsTimeout_isInterrupted_reportedStalled_andRetried(String protocol) throws Exception {
        String topic = KafkaFixture.topic("hung", 1);
        String group = topic + "-g";
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            KafkaFixture.send(producer, topic, 0, "pay-1", "v");
        }
        AtomicInteger calls = new AtomicInteger();
        CountDownLatch interrupted = new CountDownLatch(1);
        CountDownLatch letItReturn = new CountDownLatch(1);
        try (var consumer = IdempotentKafkaConsumer.builder(KafkaFixture.consumerProps(group, protocol))
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .retryPolicy(KafkaFixture.FAST_RETRY)
                .handlerTimeout(Duration.ofMillis(300))
                .handler((key, record) -> {
                    if (calls.incrementAndGet() > 1) {
                        return Outcome.processed();
                    }
                    try {
                        new CountDownLatch(1).await(WAIT.toSeconds(), TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        interrupted.countDown();
                        // A handler that ignores the interrupt for a while: the health shows it.
                        letItReturn.await(WAIT.toSeconds(), TimeUnit.SECONDS);
                        throw e;
                    }
                    return Outcome.processed();
                })
                .build()
                .start()) {
            assertThat(interrupted.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
            await().atMost(WAIT).until(() -> consumer.health().state() == Health.State.STALLED);
            assertThat(consumer.health().problems()).singleElement().asString().contains(topic + "-0@0");
            letItReturn.countDown();
            KafkaFixture.awaitAllCommitted(group, topic);
            assertThat(consumer.health().state()).isEqualTo(Health.State.RUNNING);
        }
        assertThat(calls.get()).isEqualTo(2);
    }
}
