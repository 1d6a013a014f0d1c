package dev.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.ConfigurationException;
import dev.idem.IdempotencyEvent;
import dev.idem.Outcome;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.RetriableCommitFailedException;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The runner driven through exact interleavings by a {@link ScriptedConsumer}: rebalances, lost partitions, failing
 * commits and polls, at chosen moments. The broker is only there for the dead-letter topic check at start.
 */
class InterleavingTest {
    private static String topic;

    private final ScriptedConsumer kafka = new ScriptedConsumer();
    private final MockProducer<byte[], byte[]> deadLetters =
            new MockProducer<>(true, null, new ByteArraySerializer(), new ByteArraySerializer());
    private final List<String> handled = new CopyOnWriteArrayList<>();
    private final List<IdempotencyEvent> events = new CopyOnWriteArrayList<>();
    private final List<IdempotentKafkaConsumer<?, ?>> started = new ArrayList<>();
    private TopicPartition p0;
    private TopicPartition p1;

    @BeforeAll
    static void topics() {
        topic = KafkaFixture.topic("interleave", 2);
        // start() checks the dead-letter topic at once: wait until the broker's metadata shows it.
        try (Admin admin = Admin.create(Map.of(
                AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, KafkaFixture.kafka().bootstrapServers()))) {
            await().atMost(KafkaFixture.WAIT)
                    .ignoreExceptions()
                    .until(() -> !admin.describeTopics(List.of(topic + "-dlt"))
                            .allTopicNames()
                            .get()
                            .isEmpty());
        }
    }

    @AfterEach
    void close() {
        started.forEach(IdempotentKafkaConsumer::close);
    }

    private IdempotentKafkaConsumer.Builder<String, String> runner(
            MockProducer<byte[], byte[]> deadLetterProducer, Map<String, Object> extra) {
        p0 = new TopicPartition(topic, 0);
        p1 = new TopicPartition(topic, 1);
        Map<String, Object> props = KafkaFixture.consumerProps(topic + "-g");
        props.putAll(extra);
        return IdempotentKafkaConsumer.builder(props)
                .consumerFactory(config -> kafka)
                .deadLetterProducer(deadLetterProducer)
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .retryPolicy(KafkaFixture.FAST_RETRY)
                .listener(events::add);
    }

    private IdempotentKafkaConsumer.Builder<String, String> runner() {
        return runner(deadLetters, Map.of());
    }

    private IdempotentKafkaConsumer<String, String> start(IdempotentKafkaConsumer.Builder<String, String> builder)
            throws InterruptedException {
        IdempotentKafkaConsumer<String, String> consumer = builder.build().start();
        started.add(consumer);
        kafka.assignNow(List.of(p0, p1));
        return consumer;
    }

    /** A handler that blocks on {@code key} (its first run) until released, and records every key it ran. */
    private final class Blocking implements RecordHandler<String, String> {
        final CountDownLatch entered = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        private final String blockOn;

        Blocking(String blockOn) {
            this.blockOn = blockOn;
        }

        @Override
        public Outcome handle(String key, org.apache.kafka.clients.consumer.ConsumerRecord<String, String> record)
                throws InterruptedException {
            handled.add(key);
            if (key.equals(blockOn) && entered.getCount() > 0) {
                entered.countDown();
                assertThat(release.await(KafkaFixture.WAIT.toSeconds(), TimeUnit.SECONDS))
                        .isTrue();
            }
            return Outcome.processed();
        }

        void awaitEntered() throws InterruptedException {
            assertThat(entered.await(KafkaFixture.WAIT.toSeconds(), TimeUnit.SECONDS))
                    .as("the handler reached " + blockOn)
                    .isTrue();
        }
    }

    /** Waits until the single worker handled a record of p1: the tasks before it (of any partition) have ended. */
    private void awaitWorkerPast(String key) throws InterruptedException {
        kafka.add(p1, 0, key);
        await().atMost(KafkaFixture.WAIT).until(() -> handled.contains(key));
        kafka.awaitLoopRound();
    }

    @Test
    void revokedWhileTheHandlerRuns_commitsTheFinishedRecords_andNeverTheLateResult() throws Exception {
        Blocking handler = new Blocking("a1");
        start(runner().handler(handler));
        kafka.add(p0, 0, "a0");
        kafka.add(p0, 1, "a1");
        kafka.add(p0, 2, "a2");
        handler.awaitEntered();

        kafka.assignNow(List.of(p1));
        assertThat(kafka.committedOffset(p0))
                .as("a0 finished before the revocation")
                .isEqualTo(1);

        handler.release.countDown();
        awaitWorkerPast("b0");
        assertThat(kafka.commitsOf(p0)).as("the late a1 is not committed").allMatch(offset -> offset <= 1);
        assertThat(kafka.violations()).isEmpty();
        assertThat(handled).as("no record after the revocation is run").doesNotContain("a2");
    }

    @Test
    void lostPartitions_areNeverCommitted_notEvenTheirFinishedRecords() throws Exception {
        Blocking handler = new Blocking("a2");
        start(runner().handler(handler));
        kafka.failAsyncCommits(new RetriableCommitFailedException("coordinator moved"));
        kafka.add(p0, 0, "a0");
        kafka.add(p0, 1, "a1");
        kafka.add(p0, 2, "a2");
        handler.awaitEntered();

        kafka.onPollThread(() -> kafka.losePartitions(List.of(p0)));
        kafka.failAsyncCommits(null);
        handler.release.countDown();
        awaitWorkerPast("b0");

        assertThat(kafka.commitsOf(p0)).isEmpty();
        assertThat(kafka.violations()).isEmpty();
    }

    static List<KafkaException> commitFailures() {
        return List.of(
                new CommitFailedException("member left the group"),
                new RebalanceInProgressException("rebalancing"),
                new RetriableCommitFailedException(new TimeoutException("commit timed out")));
    }

    @ParameterizedTest
    @MethodSource("commitFailures")
    void aFailedCommit_isMadeAgain_andNeverPastAnUnfinishedRecord(KafkaException failure) throws Exception {
        Blocking handler = new Blocking("a2");
        start(runner().handler(handler));
        kafka.failNextAsyncCommit(failure);
        kafka.add(p0, 0, "a0");
        kafka.add(p0, 1, "a1");
        kafka.add(p0, 2, "a2");
        handler.awaitEntered();

        await().atMost(KafkaFixture.WAIT).until(() -> kafka.committedOffset(p0) == 2);
        assertThat(kafka.commitsOf(p0)).allMatch(offset -> offset <= 2);
        handler.release.countDown();
        await().atMost(KafkaFixture.WAIT).until(() -> kafka.committedOffset(p0) == 3);
    }

    @Test
    void aFailedCommitOnRevocation_leavesTheRunnerRunning() throws Exception {
        Blocking handler = new Blocking("none");
        IdempotentKafkaConsumer<String, String> consumer = start(runner().handler(handler));
        kafka.failAsyncCommits(new RetriableCommitFailedException("coordinator moved"));
        kafka.add(p0, 0, "a0");
        await().atMost(KafkaFixture.WAIT).until(() -> handled.contains("a0"));
        kafka.failNextSyncCommit(new CommitFailedException("member left the group"));

        kafka.assignNow(List.of(p1));
        kafka.failAsyncCommits(null);
        awaitWorkerPast("b0");

        assertThat(kafka.commitsOf(p0)).isEmpty();
        assertThat(consumer.health().state()).isEqualTo(Health.State.RUNNING);
        assertThat(kafka.committedOffset(p1)).isEqualTo(1);
    }

    @Test
    void aFailingPoll_stopsTheRunnerVisibly_afterCommittingWhatIsFinal() throws Exception {
        Blocking handler = new Blocking("none");
        IdempotentKafkaConsumer<String, String> consumer = start(runner().handler(handler));
        kafka.failAsyncCommits(new RetriableCommitFailedException("coordinator moved"));
        kafka.add(p0, 0, "a0");
        await().atMost(KafkaFixture.WAIT).until(() -> handled.contains("a0"));
        kafka.awaitLoopRound();

        kafka.setPollException(new KafkaException("fatal: not authorized"));
        assertThat(consumer.awaitTermination(KafkaFixture.WAIT)).isTrue();

        assertThat(consumer.failure()).get().asString().contains("not authorized");
        assertThat(consumer.health().state()).isEqualTo(Health.State.FAILED);
        assertThat(kafka.committedOffset(p0)).as("a0 was final").isEqualTo(1);
    }

    @Test
    void anErrorFromTheHandler_isACrash_nothingMoreIsCommitted() throws Exception {
        IdempotentKafkaConsumer<String, String> consumer = start(runner().handler((key, record) -> {
            handled.add(key);
            if (key.equals("a1")) {
                throw new OutOfMemoryError("simulated");
            }
            return Outcome.processed();
        }));
        kafka.add(p0, 0, "a0");
        kafka.add(p0, 1, "a1");
        kafka.add(p0, 2, "a2");
        assertThat(consumer.awaitTermination(KafkaFixture.WAIT)).isTrue();

        assertThat(consumer.failure()).get().isInstanceOf(OutOfMemoryError.class);
        assertThat(consumer.health().state()).isEqualTo(Health.State.FAILED);
        assertThat(kafka.commitsOf(p0)).allMatch(offset -> offset <= 1);
        assertThat(handled).containsExactly("a0", "a1");
        assertThat(deadLetters.history()).isEmpty();
    }

    /** Issue 14, item 3 of the review: a misconfigured store (a table missing) must not dead-letter the stream. */
    @Test
    void aConfigurationExceptionFromTheHandler_stopsTheRunner_neverRetriedNorDeadLettered() throws Exception {
        IdempotentKafkaConsumer<String, String> consumer = start(runner().handler((key, record) -> {
            handled.add(key);
            if (key.equals("a1")) {
                throw new ConfigurationException("table idem_inbox does not exist: run the DDL");
            }
            return Outcome.processed();
        }));
        assertStopsOnConfiguration(consumer, List.of("a0", "a1"));
    }

    @Test
    void aFailedOutcomeCausedByAConfigurationException_stopsTheRunnerToo() throws Exception {
        IdempotentKafkaConsumer<String, String> consumer = start(runner().handler((key, record) -> {
            handled.add(key);
            return key.equals("a1")
                    ? Outcome.failed(
                            "handler threw", new ConfigurationException("table idem_inbox does not exist: run the DDL"))
                    : Outcome.processed();
        }));
        assertStopsOnConfiguration(consumer, List.of("a0", "a1"));
    }

    @Test
    void aConfigurationExceptionFromTheBatchHandler_stopsTheRunner() throws Exception {
        IdempotentKafkaConsumer<String, String> consumer = start(runner().batchHandler(
                        batch -> {
                            batch.forEach(r -> handled.add(r.key()));
                            if (batch.stream().anyMatch(r -> r.key().equals("a1"))) {
                                throw new ConfigurationException("table idem_inbox does not exist: run the DDL");
                            }
                            return batch.stream().map(r -> Outcome.processed()).toList();
                        },
                        1));
        assertStopsOnConfiguration(consumer, List.of("a0", "a1"));
    }

    private void assertStopsOnConfiguration(IdempotentKafkaConsumer<String, String> consumer, List<String> ran)
            throws InterruptedException {
        kafka.add(p0, 0, "a0");
        kafka.add(p0, 1, "a1");
        kafka.add(p0, 2, "a2");
        assertThat(consumer.awaitTermination(KafkaFixture.WAIT)).isTrue();

        assertThat(consumer.failure()).get().isInstanceOf(ConfigurationException.class);
        assertThat(consumer.health().state()).isEqualTo(Health.State.FAILED);
        assertThat(consumer.health().problems()).anyMatch(problem -> problem.contains("idem_inbox does not exist"));
        assertThat(deadLetters.history()).as("never dead-lettered").isEmpty();
        assertThat(handled).as("never retried").containsExactlyElementsOf(ran);
        assertThat(kafka.committedOffset(p0)).as("a0 was final, a1 is not").isEqualTo(1);
    }

    @Test
    void aDeadLetterNotAcknowledged_isNeverCommittedPast_andIsReported() throws Exception {
        MockProducer<byte[], byte[]> unacked =
                new MockProducer<>(false, null, new ByteArraySerializer(), new ByteArraySerializer());
        start(runner(unacked, Map.of()).handler((key, record) -> {
            handled.add(key);
            return key.equals("a0") ? Outcome.rejected("bad amount") : Outcome.processed();
        }));
        kafka.add(p0, 0, "a0");
        kafka.add(p0, 1, "a1");
        await().atMost(KafkaFixture.WAIT).until(() -> unacked.history().size() == 1);

        unacked.errorNext(new org.apache.kafka.common.errors.RecordTooLargeException("too large for the topic"));
        await().atMost(KafkaFixture.WAIT).until(() -> unacked.history().size() == 2);
        assertThat(kafka.commitsOf(p0)).as("a0 is not final").isEmpty();
        assertThat(handled).as("a1 waits behind a0").containsExactly("a0");
        assertThat(events)
                .as("the refused dead letter is reported")
                .anyMatch(e -> e.type() == IdempotencyEvent.Type.RETRY_SCHEDULED
                        && e.message().contains("too large for the topic"));

        unacked.completeNext();
        await().atMost(KafkaFixture.WAIT).until(() -> kafka.committedOffset(p0) == 2);
    }

    @Test
    void aMixedBatch_commitsUpToTheFirstRecordNotFinal_andNeverRerunsTheFinalOnes() throws Exception {
        List<List<String>> batches = new CopyOnWriteArrayList<>();
        List<Long> committedAtRetry = new CopyOnWriteArrayList<>();
        start(runner().batchHandler(
                        batch -> {
                            List<String> keys =
                                    batch.stream().map(KeyedRecord::key).toList();
                            boolean retry = batches.stream().anyMatch(b -> b.contains("a1"));
                            if (retry) {
                                committedAtRetry.add(kafka.committedOffset(p0));
                            }
                            batches.add(keys);
                            return keys.stream()
                                    .map(k -> !retry && k.equals("a1")
                                            ? Outcome.failed("deadlock", null)
                                            : Outcome.processed())
                                    .toList();
                        },
                        10));
        kafka.onPollThread(() -> {
            kafka.add(p0, 0, "a0");
            kafka.add(p0, 1, "a1");
            kafka.add(p0, 2, "a2");
        });

        await().atMost(KafkaFixture.WAIT).until(() -> kafka.committedOffset(p0) == 3);
        List<String> runs = batches.stream().flatMap(List::stream).toList();
        assertThat(Collections.frequency(runs, "a1"))
                .as("a1 failed once, then ran again")
                .isEqualTo(2);
        assertThat(Collections.frequency(runs, "a2"))
                .as("a2 was final in its batch: never run again")
                .isEqualTo(1);
        assertThat(batches.get(batches.size() - 1)).isEqualTo(List.of("a1"));
        assertThat(committedAtRetry).allMatch(offset -> offset <= 1);
        assertThat(kafka.commitsOf(p0)).doesNotContain(2L).last().isEqualTo(3L);
    }

    @Test
    void aPausedPartition_revokedAndAssignedAgain_isResumed_andDrains() throws Exception {
        Blocking handler = new Blocking("a0");
        kafka.setMaxPollRecords(1);
        start(runner(deadLetters, Map.of(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 1))
                .handler(handler));
        for (int i = 0; i < 4; i++) {
            kafka.add(p0, i, "a" + i);
        }
        handler.awaitEntered();
        await().atMost(KafkaFixture.WAIT).until(() -> kafka.pausedNow().contains(p0));

        kafka.assignNow(List.of(p1));
        handler.release.countDown();
        kafka.assignNow(List.of(p0, p1));
        for (int i = 0; i < 4; i++) {
            kafka.add(p0, i, "a" + i);
        }
        await().atMost(KafkaFixture.WAIT).until(() -> kafka.committedOffset(p0) == 4);
        await().atMost(KafkaFixture.WAIT).until(() -> kafka.pausedNow().isEmpty());
        assertThat(Collections.frequency(handled, "a3")).isEqualTo(1);
        assertThat(kafka.violations()).isEmpty();
    }

    /**
     * close() called from several threads at once (a shutdown hook and the application's own close, say): each call
     * woke the client, and the final commit retries a woken try only once, so a wakeup per try skipped it, logged as a
     * failed commit. (The real clients' close() then commits again from onPartitionsRevoked, but not when it reports
     * the partitions lost during a rebalance: those records are redelivered.)
     */
    @Test
    void closedFromSeveralThreadsAtOnce_stillCommitsTheFinishedRecords() throws Exception {
        IdempotentKafkaConsumer<String, String> consumer = start(runner().handler((key, record) -> {
            handled.add(key);
            return Outcome.processed();
        }));
        kafka.failAsyncCommits(new RetriableCommitFailedException("coordinator moved"));
        kafka.add(p0, 0, "a0");
        await().atMost(KafkaFixture.WAIT).until(() -> handled.contains("a0"));
        kafka.awaitLoopRound();
        kafka.beforeEachCommitSync(() -> {
            Thread closer = new Thread(consumer::close);
            closer.start();
            // close() has asked the runner to stop once it waits for the poll loop to end.
            await().atMost(KafkaFixture.WAIT).until(() -> closer.getState() == Thread.State.TIMED_WAITING);
        });

        consumer.close();

        assertThat(kafka.committedOffset(p0)).isEqualTo(1);
    }
}
