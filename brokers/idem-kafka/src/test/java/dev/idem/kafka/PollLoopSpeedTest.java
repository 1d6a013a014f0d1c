package dev.idem.kafka;

import static dev.idem.kafka.KafkaFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Outcome;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The poll loop neither sleeps while finished work waits nor spins while work is held. */
class PollLoopSpeedTest {

    /**
     * Issue 14 item 9: with every dispatched partition paused, {@code poll} blocked its whole timeout after each
     * batch. With a 20 s poll timeout, 300 records in batches of 50 took minutes; they must not wait for it.
     */
    @ParameterizedTest
    @ValueSource(strings = {"classic", "consumer"})
    void finishedWork_isCommittedWithoutWaitingForThePollTimeout(String protocol) throws Exception {
        String topic = KafkaFixture.topic("nosleep", 1);
        String group = topic + "-g";
        KafkaFixture.sendMany(topic, "pay-", 300);
        Map<String, Object> props = new HashMap<>(KafkaFixture.consumerProps(group, protocol));
        props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 50);
        try (var consumer = IdempotentKafkaConsumer.builder(props)
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .pollTimeout(Duration.ofSeconds(20))
                .handler((key, record) -> Outcome.processed())
                .build()
                .start()) {
            await().atMost(Duration.ofSeconds(15)).until(() -> committed(group, topic) == 300);
        }
    }

    /**
     * {@code close()} woke the poll thread with an unpark, which a blocked {@code poll} does not notice: with nothing
     * to fetch, closing waited out the poll timeout (20 s in the test above; with a longer one, close gave up after
     * the shutdown timeout plus 30 s and returned while the loop still ran).
     */
    @ParameterizedTest
    @ValueSource(strings = {"classic", "consumer"})
    void close_whilePollWaitsForRecords_endsTheLoopWithoutWaitingForThePollTimeout(String protocol) throws Exception {
        String topic = KafkaFixture.topic("wakeclose", 1);
        var consumer = IdempotentKafkaConsumer.builder(KafkaFixture.consumerProps(topic + "-g", protocol))
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .pollTimeout(Duration.ofMinutes(10))
                .shutdownTimeout(Duration.ofSeconds(1))
                .handler((key, record) -> Outcome.processed())
                .build()
                .start();
        await().atMost(WAIT).until(() -> !consumer.assignment().isEmpty());

        consumer.close();

        assertThat(consumer.isRunning())
                .as("the poll loop still runs after close()")
                .isFalse();
    }

    /**
     * Issue 14 item 10: kafka-clients 4.4's {@code poll(timeout)} spins under {@code group.protocol=consumer} while a
     * paused partition holds fetched records. A handler holds the partition while thousands of records are fetched
     * behind it; the poll thread must stay nearly idle (the old runner burnt 672 ms of CPU in 3 s here).
     */
    @ParameterizedTest
    @ValueSource(strings = {"classic", "consumer"})
    void heldPartitionWithFetchedRecordsBehindIt_doesNotSpinThePollThread(String protocol) throws Exception {
        String topic = KafkaFixture.topic("nospin", 1);
        String group = topic + "-g";
        KafkaFixture.sendMany(topic, "pay-", 5000);
        Map<String, Object> props = new HashMap<>(KafkaFixture.consumerProps(group, protocol));
        props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 100);
        CountDownLatch inHandler = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        try (var consumer = IdempotentKafkaConsumer.builder(props)
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .handler((key, record) -> {
                    if (record.offset() == 0) {
                        inHandler.countDown();
                        release.await(WAIT.toSeconds(), TimeUnit.SECONDS);
                    }
                    return Outcome.processed();
                })
                .build()
                .start()) {
            assertThat(inHandler.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
            Thread pollThread = Thread.getAllStackTraces().keySet().stream()
                    .filter(t -> t.getName().equals("idem-kafka-" + group + "-poll"))
                    .findFirst()
                    .orElseThrow();
            ThreadMXBean threads = ManagementFactory.getThreadMXBean();
            // Let the fetches behind the held record arrive and the partition be paused.
            await().pollDelay(Duration.ofMillis(500)).atMost(WAIT).until(() -> true);
            long cpuBefore = threads.getThreadCpuTime(pollThread.getId());
            long wallBefore = System.nanoTime();
            await().pollDelay(Duration.ofSeconds(3)).atMost(WAIT).until(() -> true);
            long cpu = threads.getThreadCpuTime(pollThread.getId()) - cpuBefore;
            long wall = System.nanoTime() - wallBefore;
            release.countDown();
            assertThat(cpu)
                    .as("poll thread CPU %d ms in %d ms", cpu / 1_000_000, wall / 1_000_000)
                    .isLessThan(wall / 10);
            await().atMost(WAIT).until(() -> committed(group, topic) == 5000);
        }
    }

    private static long committed(String group, String topic) throws Exception {
        OffsetAndMetadata offset = KafkaFixture.committed(group).get(new TopicPartition(topic, 0));
        return offset == null ? -1 : offset.offset();
    }
}
