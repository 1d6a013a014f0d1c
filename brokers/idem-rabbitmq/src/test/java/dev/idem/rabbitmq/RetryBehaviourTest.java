package dev.idem.rabbitmq;

import static dev.idem.rabbitmq.RabbitFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.Delivery;
import com.rabbitmq.client.GetResponse;
import dev.idem.Guard;
import dev.idem.InMemoryStore;
import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import dev.idem.spi.FailureClassifier;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** How retries are counted, delayed and bounded, and that a copy is confirmed before the delivery is acked. */
class RetryBehaviourTest {
    /** Two attempts only, so that any attempt-bound dead-lettering would show at once. */
    static final RetryPolicy TWO_ATTEMPTS = RabbitFixture.steadyRetry(Duration.ofMillis(50), 2);

    @Test
    void inProgress_isRetriedBeyondMaxAttempts_neverDeadLettered_andFinishesAsDuplicate() throws Exception {
        try (Guard guard = Guard.of(InMemoryStore.create(), "held");
                RabbitFixture.Queues queues = RabbitFixture.queues("held");
                Connection connection = RabbitFixture.connect()) {
            CountDownLatch holding = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            CompletableFuture<Outcome> holder = CompletableFuture.supplyAsync(() -> guard.run("pay-1", () -> {
                holding.countDown();
                release.await(WAIT.toSeconds(), TimeUnit.SECONDS);
            }));
            assertThat(holding.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
            queues.publish("pay-1", "x");
            List<Outcome.Type> outcomes = new CopyOnWriteArrayList<>();
            List<Object> attemptHeaders = new CopyOnWriteArrayList<>();
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .retryPolicy(TWO_ATTEMPTS)
                    .handler((key, message) -> {
                        Map<String, Object> h = message.getProperties().getHeaders();
                        attemptHeaders.add(h == null ? "none" : h.get(DeliveryProcessor.ATTEMPTS_HEADER));
                        Outcome outcome = guard.run(key, () -> {});
                        outcomes.add(outcome.type());
                        return outcome;
                    })
                    .build()
                    .start()) {
                await().atMost(WAIT).until(() -> outcomes.size() >= 5);
                assertThat(queues.depth(queues.topology.deadLetterQueue())).isZero();
                release.countDown();
                assertThat(holder.get(WAIT.toSeconds(), TimeUnit.SECONDS).type())
                        .isEqualTo(Outcome.Type.PROCESSED);
                await().atMost(WAIT).until(() -> outcomes.get(outcomes.size() - 1) == Outcome.Type.DUPLICATE);
            }
            assertThat(outcomes.subList(0, 5)).containsOnly(Outcome.Type.IN_PROGRESS);
            assertThat(attemptHeaders.subList(1, attemptHeaders.size()))
                    .as("waiting for the holder is not an attempt")
                    .containsOnly(0);
            assertThat(queues.depth(queues.topology.deadLetterQueue())).isZero();
            assertThat(queues.depth(queues.queue())).isZero();
        }
    }

    /** An application's own "database down" exception, which only its classifier knows. */
    static final class LedgerDownException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        LedgerDownException() {
            super("ledger service unreachable");
        }
    }

    @Test
    void exceptionTheClassifierKnowsAsUnreachable_waitsBeyondMaxAttempts_neverDeadLettered() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("classified");
                Connection connection = RabbitFixture.connect()) {
            queues.publish("pay-1", "x");
            AtomicInteger calls = new AtomicInteger();
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .retryPolicy(TWO_ATTEMPTS)
                    .classifier(FailureClassifier.builder()
                            .unreachable(LedgerDownException.class)
                            .build())
                    .handler((key, message) -> {
                        if (calls.incrementAndGet() <= 5) {
                            throw new LedgerDownException();
                        }
                        return Outcome.processed();
                    })
                    .build()
                    .start()) {
                await().atMost(WAIT).until(() -> calls.get() == 6 && queues.depth(queues.queue()) == 0);
            }
            assertThat(queues.depth(queues.topology.deadLetterQueue())).isZero();
            assertThat(queues.depth(queues.topology.retryQueue())).isZero();
        }
    }

    /** Stands for the process dying: not an exception a handler would catch. */
    static final class SimulatedCrash extends Error {
        private static final long serialVersionUID = 1L;

        SimulatedCrash() {
            super("simulated crash before the ack");
        }
    }

    @Test
    void attemptCount_survivesACrashRedelivery_andTheBoundCountsOnlyTheHandlersFailures() throws Exception {
        RetryPolicy threeAttempts = RabbitFixture.steadyRetry(Duration.ofMillis(50), 3);
        try (RabbitFixture.Queues queues = RabbitFixture.queues("crashcount");
                Connection connection = RabbitFixture.connect()) {
            queues.publish("pay-1", "x");
            List<Object> attemptHeaders = new CopyOnWriteArrayList<>();
            AtomicInteger calls = new AtomicInteger();
            MessageHandler handler = (key, message) -> {
                Map<String, Object> h = message.getProperties().getHeaders();
                attemptHeaders.add(h == null ? "none" : h.get(DeliveryProcessor.ATTEMPTS_HEADER));
                if (calls.incrementAndGet() == 2) {
                    throw new SimulatedCrash();
                }
                return Outcome.failed("payment service down", null);
            };
            var crashing = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .retryPolicy(threeAttempts)
                    .handler(handler)
                    .build()
                    .start();
            await().atMost(WAIT).until(() -> !crashing.isRunning());
            assertThat(crashing.failure()).get().isInstanceOf(SimulatedCrash.class);
            crashing.close();
            try (var restarted = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .retryPolicy(threeAttempts)
                    .handler(handler)
                    .build()
                    .start()) {
                await().atMost(WAIT).until(() -> queues.depth(queues.topology.deadLetterQueue()) == 1);
            }
            assertThat(attemptHeaders)
                    .as("first delivery, retry 1, the crash's redelivery keeps 1, retry 2")
                    .containsExactly("none", 1, 1, 2);
            GetResponse dead = queues.drain(queues.topology.deadLetterQueue()).get(0);
            Map<String, Object> headers = dead.getProps().getHeaders();
            assertThat(headers.get(DeliveryProcessor.DLQ_ATTEMPTS)).isEqualTo(3);
            assertThat(headers.get(DeliveryProcessor.DLQ_REASON))
                    .asString()
                    .isEqualTo("gave up after 3 attempts; last: payment service down");
            assertThat(headers.get(DeliveryProcessor.DLQ_OUTCOME)).asString().isEqualTo("FAILED");
            assertThat(headers.get(DeliveryProcessor.DLQ_QUEUE)).asString().isEqualTo(queues.queue());
            assertThat(headers.get(DeliveryProcessor.DLQ_EXCHANGE)).asString().isEmpty();
            assertThat(headers.get(DeliveryProcessor.DLQ_ROUTING_KEY))
                    .asString()
                    .isEqualTo(queues.queue());
            assertThat(dead.getProps().getMessageId()).isEqualTo("pay-1");
            assertThat(RabbitFixture.text(dead.getBody())).isEqualTo("x");
        }
    }

    @Test
    void retryCopy_carriesTheBackoffAsTtl_theAttemptAndTheMessageId() throws Exception {
        RetryPolicy slow = RabbitFixture.steadyRetry(Duration.ofMinutes(5), 10);
        try (RabbitFixture.Queues queues = RabbitFixture.queues("ttlcopy");
                Channel channel = queues.admin.createChannel()) {
            queues.publish("pay-1", "x");
            DeliveryProcessor processor = DeliveryProcessor.builder(queues.topology)
                    .retryPolicy(slow)
                    .handler((key, message) -> Outcome.outOfOrder("order not created yet"))
                    .build();
            assertThat(processor.process(channel, take(channel, queues.queue())).type())
                    .isEqualTo(Outcome.Type.OUT_OF_ORDER);
            GetResponse copy = channel.basicGet(queues.topology.retryQueue(), true);
            assertThat(copy.getProps().getExpiration()).isEqualTo("300000");
            assertThat(copy.getProps().getMessageId()).isEqualTo("pay-1");
            assertThat(copy.getProps().getHeaders()).containsEntry(DeliveryProcessor.ATTEMPTS_HEADER, 1);
            assertThat(queues.depth(queues.queue()))
                    .as("the original was acked")
                    .isZero();
        }
    }

    @Test
    void retryQueueDeletedAfterItWasChecked_copyReturnedUnroutable_channelAborted_deliveryGoesBack() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("noretry")) {
            Channel channel = queues.admin.createChannel(); // aborted by the processor
            DeliveryProcessor processor = DeliveryProcessor.builder(queues.topology)
                    .handler((key, message) -> Outcome.failed("payment service down", null))
                    .build();
            queues.publish("pay-1", "x");
            processor.process(channel, take(channel, queues.queue())); // checks the retry queue, and retries through it
            channel.queueDelete(queues.topology.retryQueue());
            queues.publish("pay-2", "x");
            Delivery delivery = take(channel, queues.queue());
            assertThatThrownBy(() -> processor.process(channel, delivery))
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining("retry copy not confirmed")
                    .hasMessageContaining("unroutable");
            assertThat(channel.isOpen())
                    .as("aborted: the host reopens it after a pause")
                    .isFalse();
            await().atMost(WAIT).until(() -> queues.depth(queues.queue()) == 1);
        }
    }

    @Test
    void deadLetterExchangeMissing_deliveryGoesBackToTheWorkQueue_neverLost() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("nodlx")) {
            Channel channel = queues.admin.createChannel(); // closed by the broker: publishing to a missing exchange
            queues.publish("pay-1", "x");
            try (Channel admin = queues.admin.createChannel()) {
                admin.exchangeDelete(queues.topology.deadLetterExchange());
            }
            DeliveryProcessor processor = DeliveryProcessor.builder(queues.topology)
                    .handler((key, message) -> Outcome.rejected("amount is negative"))
                    .build();
            Delivery delivery = take(channel, queues.queue());
            assertThatThrownBy(() -> processor.process(channel, delivery))
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining("dead letter not confirmed")
                    .hasMessageContaining("no exchange");
            assertThat(channel.isOpen()).isFalse();
            await().atMost(WAIT).until(() -> queues.depth(queues.queue()) == 1);
        }
    }

    /** One delivery of {@code queue}, unacked on {@code channel}. */
    private static Delivery take(Channel channel, String queue) throws IOException {
        GetResponse r = null;
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (r == null && System.nanoTime() < deadline) {
            r = channel.basicGet(queue, false);
        }
        assertThat(r).as("a message in " + queue).isNotNull();
        return new Delivery(r.getEnvelope(), r.getProps(), r.getBody());
    }
}
