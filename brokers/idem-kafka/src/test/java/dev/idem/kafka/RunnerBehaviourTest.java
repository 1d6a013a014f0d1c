package dev.idem.kafka;

import static dev.idem.kafka.KafkaFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/** Rebalance safety, graceful shutdown and parallel partitions, against the real broker. */
class RunnerBehaviourTest {

    @Test
    void partitionRevokedMidHandling_oldOwnerNeverCommitsThatRecord() throws Exception {
        String topic = KafkaFixture.topic("revoked", 1);
        String group = topic + "-group";
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            KafkaFixture.send(producer, topic, 0, "pay-1", "x");
        }
        CountDownLatch firstInHandler = new CountDownLatch(1);
        CountDownLatch releaseFirst = new CountDownLatch(1);
        CountDownLatch firstReturned = new CountDownLatch(1);
        CountDownLatch secondSawIt = new CountDownLatch(1);

        // The range assignor orders members by id, which starts with the client id: "a-" takes the partition.
        Map<String, Object> oldOwnerProps = new java.util.HashMap<>(KafkaFixture.consumerProps(group));
        oldOwnerProps.put(ConsumerConfig.CLIENT_ID_CONFIG, "z-" + group);
        Map<String, Object> newOwnerProps = new java.util.HashMap<>(KafkaFixture.consumerProps(group));
        newOwnerProps.put(ConsumerConfig.CLIENT_ID_CONFIG, "a-" + group);

        var oldOwner = IdempotentKafkaConsumer.builder(oldOwnerProps)
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .handler((key, record) -> {
                    firstInHandler.countDown();
                    releaseFirst.await(WAIT.toSeconds(), TimeUnit.SECONDS);
                    firstReturned.countDown();
                    return Outcome.processed();
                })
                .build()
                .start();
        try (var newOwner = IdempotentKafkaConsumer.builder(newOwnerProps)
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .retryPolicy(RetryPolicy.builder()
                        .initialDelay(Duration.ofMillis(100))
                        .multiplier(1.0)
                        .maxDelay(Duration.ofMillis(100))
                        .maxAttempts(1000)
                        .jitter(0.0)
                        .build())
                .handler((key, record) -> {
                    secondSawIt.countDown();
                    return Outcome.inProgress("held by the old owner", null);
                })
                .build()) {
            assertThat(firstInHandler.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
            newOwner.start();
            assertThat(secondSawIt.await(WAIT.toSeconds(), TimeUnit.SECONDS))
                    .as("the new owner got the record while the old owner still handled it")
                    .isTrue();
            assertThat(oldOwner.assignment()).isEmpty();

            releaseFirst.countDown();
            assertThat(firstReturned.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
            oldOwner.close();
            assertThat(KafkaFixture.committed(group))
                    .as("the old owner finished the record after losing the partition and did not commit it")
                    .doesNotContainKey(new TopicPartition(topic, 0));
        } finally {
            releaseFirst.countDown();
            oldOwner.close();
        }
    }

    @Test
    void close_whileHandlerRuns_finishesThatRecord_commitsIt_andHandlesNoMore() throws Exception {
        String topic = KafkaFixture.topic("shutdown", 1);
        String group = topic + "-group";
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            KafkaFixture.send(producer, topic, 0, "k-0", "x");
            KafkaFixture.send(producer, topic, 0, "k-1", "x");
        }
        CountDownLatch inHandler = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        List<String> seen = new CopyOnWriteArrayList<>();
        var consumer = IdempotentKafkaConsumer.builder(KafkaFixture.consumerProps(group))
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .handler((key, record) -> {
                    seen.add(key);
                    inHandler.countDown();
                    release.await(WAIT.toSeconds(), TimeUnit.SECONDS);
                    return Outcome.processed();
                })
                .build()
                .start();
        assertThat(inHandler.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
        Thread closing = new Thread(consumer::close, "closer");
        closing.start();
        // close() has asked the runner to stop once it waits for the poll loop to end.
        await().atMost(WAIT).until(() -> closing.getState() == Thread.State.TIMED_WAITING);
        release.countDown();
        closing.join(WAIT.toMillis());

        assertThat(consumer.isRunning()).isFalse();
        assertThat(seen).containsExactly("k-0");
        assertThat(KafkaFixture.committed(group).get(new TopicPartition(topic, 0)))
                .extracting(OffsetAndMetadata::offset)
                .isEqualTo(1L);
    }

    /**
     * close() interrupts a handler that outlives the shutdown timeout; the record is left uncommitted and comes back.
     * Its interrupted handling is not the record's failure: on its last attempt (here the only one) it must not be
     * dead-lettered, or the redelivery applies it while the dead-letter topic says it was given up.
     */
    @Test
    void handlerInterruptedByClose_isNotDeadLettered_andIsHandledAfterwards() throws Exception {
        String topic = KafkaFixture.topic("shutdown-interrupt", 1);
        String group = topic + "-group";
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            KafkaFixture.send(producer, topic, 0, "k-0", "x");
        }
        RetryPolicy once = RetryPolicy.builder().maxAttempts(1).build();
        CountDownLatch inHandler = new CountDownLatch(1);
        var first = KafkaFixture.consumer(group, topic)
                .retryPolicy(once)
                .shutdownTimeout(Duration.ofMillis(200))
                .handler((key, record) -> {
                    inHandler.countDown();
                    new CountDownLatch(1).await(); // ends only when close() interrupts it
                    return Outcome.processed();
                })
                .build()
                .start();
        assertThat(inHandler.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
        first.close();

        List<String> handled = new CopyOnWriteArrayList<>();
        var second = KafkaFixture.consumer(group, topic)
                .retryPolicy(once)
                .handler((key, record) -> {
                    handled.add(key);
                    return Outcome.processed();
                })
                .build()
                .start();
        try {
            KafkaFixture.awaitAllCommitted(group, topic);
        } finally {
            second.close();
        }
        assertThat(handled).containsExactly("k-0");
        assertThat(KafkaFixture.readAll(topic + "-dlt")).isEmpty();
    }

    @Test
    void twoPartitions_twoWorkers_areHandledInParallel_inOffsetOrderWithinEachPartition() throws Exception {
        String topic = KafkaFixture.topic("parallel", 2);
        String group = topic + "-group";
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (int i = 0; i < 5; i++) {
                for (int p = 0; p < 2; p++) {
                    KafkaFixture.send(producer, topic, p, p + "-" + i, Integer.toString(i));
                }
            }
        }
        CountDownLatch bothPartitionsInHandler = new CountDownLatch(2);
        Map<Integer, List<Long>> offsets = new ConcurrentHashMap<>();
        try (var consumer = IdempotentKafkaConsumer.builder(KafkaFixture.consumerProps(group))
                .topics(topic)
                .workers(2)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .handler((key, record) -> {
                    if (record.offset() == 0) {
                        bothPartitionsInHandler.countDown();
                        if (!bothPartitionsInHandler.await(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                            throw new AssertionError("the two partitions were not handled in parallel");
                        }
                    }
                    offsets.computeIfAbsent(record.partition(), p -> new CopyOnWriteArrayList<>())
                            .add(record.offset());
                    return Outcome.processed();
                })
                .build()
                .start()) {
            KafkaFixture.awaitAllCommitted(group, topic);
        }
        assertThat(bothPartitionsInHandler.getCount()).isZero();
        assertThat(offsets.get(0)).containsExactly(0L, 1L, 2L, 3L, 4L);
        assertThat(offsets.get(1)).containsExactly(0L, 1L, 2L, 3L, 4L);
    }

    @Test
    void assignment_isEmptyAfterClose() {
        String topic = KafkaFixture.topic("assignment", 1);
        var consumer = IdempotentKafkaConsumer.builder(KafkaFixture.consumerProps(topic + "-group"))
                .topics(topic)
                .keyFrom(KeyExtractor.recordKey())
                .handler((key, record) -> Outcome.processed())
                .build()
                .start();
        await().atMost(WAIT).until(() -> consumer.assignment().size() == 1);
        consumer.close();
        assertThat(consumer.assignment()).isEmpty();
        assertThat(consumer.failure()).isEmpty();
    }
}
