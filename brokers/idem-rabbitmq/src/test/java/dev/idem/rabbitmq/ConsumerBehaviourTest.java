package dev.idem.rabbitmq;

import static dev.idem.rabbitmq.RabbitFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import dev.idem.ConfigurationException;
import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import dev.idem.testsupport.TestServers;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Concurrency, prefetch, channel reopening, start and close of {@link IdempotentRabbitConsumer}. */
class ConsumerBehaviourTest {

    @Test
    void concurrency_handlesOnThatManyChannelsAtOnce() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("parallel");
                Connection connection = RabbitFixture.connect()) {
            CountDownLatch allInHand = new CountDownLatch(3);
            Set<String> threads = ConcurrentHashMap.newKeySet();
            for (int i = 0; i < 3; i++) {
                queues.publish("m-" + i, "x");
            }
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .concurrency(3)
                    .prefetch(1)
                    .handler((key, message) -> {
                        threads.add(Thread.currentThread().getName());
                        allInHand.countDown();
                        return allInHand.await(WAIT.toSeconds(), TimeUnit.SECONDS)
                                ? Outcome.processed()
                                : Outcome.failed("not all three were in hand at once", null);
                    })
                    .build()
                    .start()) {
                assertThat(allInHand.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
                await().atMost(WAIT).until(() -> queues.depth(queues.queue()) == 0);
            }
            assertThat(threads).hasSize(3);
        }
    }

    @Test
    void prefetch_boundsTheUnackedDeliveriesOfAChannel() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("prefetch");
                Connection connection = RabbitFixture.connect()) {
            for (int i = 0; i < 5; i++) {
                queues.publish("m-" + i, "x");
            }
            CountDownLatch release = new CountDownLatch(1);
            AtomicInteger handled = new AtomicInteger();
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .prefetch(2)
                    .handler((key, message) -> {
                        release.await(WAIT.toSeconds(), TimeUnit.SECONDS);
                        handled.incrementAndGet();
                        return Outcome.processed();
                    })
                    .build()
                    .start()) {
                await().atMost(WAIT).until(() -> queues.depth(queues.queue()) == 3);
                release.countDown();
                await().atMost(WAIT).until(() -> handled.get() == 5 && queues.depth(queues.queue()) == 0);
            }
        }
    }

    @Test
    void close_finishesTheMessageInHand_prefetchedOnesGoBackToTheQueue() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("close");
                Connection connection = RabbitFixture.connect()) {
            queues.publish("m-1", "x");
            queues.publish("m-2", "x");
            CountDownLatch inHand = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            List<String> handled = new CopyOnWriteArrayList<>();
            var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .prefetch(2)
                    .handler((key, message) -> {
                        inHand.countDown();
                        release.await(WAIT.toSeconds(), TimeUnit.SECONDS);
                        handled.add(key);
                        return Outcome.processed();
                    })
                    .build()
                    .start();
            assertThat(inHand.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
            CompletableFuture<Void> closing = CompletableFuture.runAsync(consumer::close);
            await().atMost(WAIT).until(() -> !consumer.isRunning());
            release.countDown();
            closing.get(WAIT.toSeconds(), TimeUnit.SECONDS);
            assertThat(handled).containsExactly("m-1");
            await().atMost(WAIT).until(() -> queues.depth(queues.queue()) == 1);
            assertThat(consumer.isRunning()).isFalse();
        }
    }

    @Test
    void channelAbortedAfterAnUnplacedRetryCopy_isReopened_andTheRedeliveryIsHandled() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("reopen");
                Connection connection = RabbitFixture.connect()) {
            List<Boolean> redelivered = new CopyOnWriteArrayList<>();
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .retryPolicy(RabbitFixture.FAST_RETRY)
                    .handler((key, message) -> {
                        redelivered.add(message.getEnvelope().isRedeliver());
                        return redelivered.size() == 1
                                ? Outcome.failed("payment service down", null)
                                : Outcome.processed();
                    })
                    .build()
                    .start()) {
                try (Channel admin = queues.admin.createChannel()) {
                    admin.queueDelete(queues.topology.retryQueue());
                }
                queues.publish("pay-1", "x");
                await().atMost(WAIT).until(() -> redelivered.size() == 2 && queues.depth(queues.queue()) == 0);
                assertThat(consumer.isRunning()).isTrue();
            }
            assertThat(redelivered).containsExactly(false, true);
        }
    }

    @Test
    void channelClosedByTheBroker_missingDeadLetterExchange_isReopened_messageDeadLetteredOnceItExists()
            throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("brokerclose");
                Connection connection = RabbitFixture.connect()) {
            AtomicInteger handled = new AtomicInteger();
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .retryPolicy(RabbitFixture.FAST_RETRY)
                    .handler((key, message) -> {
                        handled.incrementAndGet();
                        return Outcome.rejected("amount is negative");
                    })
                    .build()
                    .start()) {
                try (Channel admin = queues.admin.createChannel()) {
                    admin.exchangeDelete(queues.topology.deadLetterExchange());
                }
                queues.publish("bad-1", "x");
                await().atMost(WAIT).until(() -> handled.get() >= 2);
                assertThat(queues.depth(queues.topology.deadLetterQueue())).isZero();
                try (Channel admin = queues.admin.createChannel()) {
                    queues.topology.declare(admin);
                }
                await().atMost(WAIT).until(() -> queues.depth(queues.topology.deadLetterQueue()) == 1);
                assertThat(consumer.isRunning()).isTrue();
            }
            assertThat(queues.depth(queues.queue())).isZero();
        }
    }

    /**
     * The work queue is deleted while a channel the broker closed waits to be reopened (no consumer is left on it to
     * be cancelled): the consumer stops and says why, as when its consumer is cancelled, instead of running on with no
     * channel and failing to reopen it every pause.
     */
    @Test
    void workQueueDeletedWhileAChannelWaitsToBeReopened_theConsumerStopsAndSaysWhy() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("deletedreopen");
                Connection connection = RabbitFixture.connect()) {
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .retryPolicy(RetryPolicy.builder()
                            .initialDelay(Duration.ofSeconds(2))
                            .maxDelay(Duration.ofSeconds(2))
                            .build())
                    .handler((key, message) -> Outcome.rejected("amount is negative"))
                    .build()
                    .start()) {
                try (Channel admin = queues.admin.createChannel()) {
                    admin.exchangeDelete(queues.topology.deadLetterExchange());
                }
                queues.publish("bad-1", "x");
                await().atMost(WAIT).until(() -> queues.depth(queues.queue()) == 1); // channel closed (404)
                try (Channel admin = queues.admin.createChannel()) {
                    admin.queueDelete(queues.queue());
                }
                await().atMost(Duration.ofSeconds(20)).until(() -> !consumer.isRunning());
                assertThat(consumer.failure())
                        .get()
                        .asString()
                        .contains(queues.queue())
                        .contains("declare");
            }
        }
    }

    @Test
    void start_withoutTopology_failsNamingTheFix_declareTopologyCreatesIt() throws Exception {
        RabbitTopology topology = RabbitTopology.forQueue(TestServers.uniquePrefix("undeclared"));
        try (Connection connection = RabbitFixture.connect()) {
            var missing = IdempotentRabbitConsumer.builder(connection, topology)
                    .handler((key, message) -> Outcome.processed())
                    .build();
            assertThatThrownBy(missing::start)
                    .isInstanceOf(ConfigurationException.class)
                    .hasMessageContaining("declareTopology(true)");
            try (var declaring = IdempotentRabbitConsumer.builder(connection, topology)
                            .declareTopology(true)
                            .handler((key, message) -> Outcome.processed())
                            .build()
                            .start();
                    RabbitFixture.Queues queues = new RabbitFixture.Queues(topology)) {
                topology.verify(connection);
                assertThat(declaring.isRunning()).isTrue();
            }
        }
    }

    @Test
    void connectionClosedByTheApplication_stopsTheConsumer_withTheReason() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("appclose")) {
            Connection connection = RabbitFixture.connect();
            var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .handler((key, message) -> Outcome.processed())
                    .build()
                    .start();
            connection.close();
            await().atMost(WAIT).until(() -> !consumer.isRunning());
            assertThat(consumer.failure()).get().asString().contains("closed by the application");
            consumer.close();
        }
    }

    @Test
    void builder_refusesOutOfRangeSettings() {
        try (Connection connection = RabbitFixture.connect()) {
            var builder = IdempotentRabbitConsumer.builder(connection, RabbitTopology.forQueue("q"));
            assertThatThrownBy(() -> builder.prefetch(0)).hasMessageContaining("prefetch must be 1 to 65535");
            assertThatThrownBy(() -> builder.concurrency(0)).hasMessageContaining("concurrency must be 1 to 1000");
            assertThatThrownBy(builder::build).hasMessageContaining("needs a handler");
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
