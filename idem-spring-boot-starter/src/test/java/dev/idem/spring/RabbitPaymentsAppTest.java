package dev.idem.spring;

import static dev.idem.spring.RabbitQueues.connection;
import static dev.idem.spring.RabbitQueues.publish;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import dev.idem.rabbitmq.DeliveryProcessor;
import dev.idem.rabbitmq.RabbitTopology;
import dev.idem.spring.rabbitapp.RabbitPaymentListener;
import dev.idem.spring.rabbitapp.RabbitPaymentsTestApp;
import dev.idem.testsupport.TestDatabase;
import dev.idem.testsupport.TestServers;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Callable;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.MessageBuilder;
import org.springframework.amqp.rabbit.listener.RabbitListenerEndpointRegistry;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * {@code @RabbitListener} + {@code @Transactional} + {@code @Idempotent} end to end: the local RabbitMQ, PostgreSQL,
 * spring-rabbit's default container (AUTO acks, no retry interceptor) with the starter's advice.
 */
@SpringBootTest(classes = RabbitPaymentsTestApp.class)
@DirtiesContext
class RabbitPaymentsAppTest {
    static final TestDatabase DB = TestDatabase.postgres("spring_rabbit");
    static final RabbitTopology TOPOLOGY = RabbitTopology.forQueue(TestServers.uniquePrefix("springrabbit"));
    static final Duration RETRY_DELAY = Duration.ofMillis(400);

    @Autowired
    RabbitPaymentListener listener;

    @Autowired
    JdbcTemplate jdbc;

    @Autowired
    TransactionTemplate transactions;

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) throws Exception {
        URI rabbit = URI.create(TestServers.rabbitmq().url());
        try (Connection c = connection();
                Channel channel = c.createChannel()) {
            TOPOLOGY.declare(channel);
        }
        registry.add("spring.datasource.url", DB::url);
        registry.add("spring.liquibase.enabled", () -> "false");
        registry.add("spring.rabbitmq.host", rabbit::getHost);
        registry.add("spring.rabbitmq.port", rabbit::getPort);
        registry.add("spring.rabbitmq.username", () -> "guest");
        registry.add("spring.rabbitmq.password", () -> "guest");
        registry.add("spring.rabbitmq.listener.simple.concurrency", () -> "3");
        registry.add("payments.queue", TOPOLOGY::workQueue);
        registry.add("idem.rabbit.initial-delay", RETRY_DELAY::toString);
        registry.add("idem.rabbit.jitter", () -> "0");
        registry.add("idem.rabbit.max-attempts", () -> "3");
    }

    @AfterAll
    static void deleteTopologyAndDatabase(@Autowired RabbitListenerEndpointRegistry containers) throws Exception {
        containers.stop(); // before the queues go, so that no consumer sees them deleted
        try (Connection c = connection();
                Channel channel = c.createChannel()) {
            channel.queueDelete(TOPOLOGY.workQueue());
            channel.queueDelete(TOPOLOGY.retryQueue());
            channel.queueDelete(TOPOLOGY.deadLetterQueue());
            channel.exchangeDelete(TOPOLOGY.deadLetterExchange());
        }
        DB.close();
    }

    @Test
    void duplicates_ofEachPayment_areAppliedOnce() throws Exception {
        List<String> ids = new ArrayList<>();
        try (Connection c = connection();
                Channel channel = c.createChannel()) {
            for (int i = 0; i < 10; i++) {
                String id = "pay-" + UUID.randomUUID();
                ids.add(id);
                for (int copy = 0; copy < 4; copy++) { // read by three concurrent consumers
                    publish(channel, TOPOLOGY.workQueue(), id, "amount=10");
                }
            }
        }
        awaitOrExplain(
                () -> queueEmpty(TOPOLOGY.workQueue()) && allApplied(ids),
                () -> "ready in the work queue: " + readyIn(TOPOLOGY.workQueue()) + "; marks per payment: "
                        + ids.stream().map(this::marks).toList() + "; the listener's attempts per payment: "
                        + ids.stream().map(id -> listener.attempts(id).size()).toList());
        for (String id : ids) {
            assertThat(listener.rows(id)).as(id).isEqualTo(1);
            assertThat(marks(id)).as(id).isEqualTo(1);
        }
    }

    @Test
    void aFailedAttempt_isRolledBack_redeliveredAfterTheDelay_andAppliedOnce() throws Exception {
        String id = "pay-" + UUID.randomUUID();
        try (Connection c = connection();
                Channel channel = c.createChannel()) {
            publish(channel, TOPOLOGY.workQueue(), id, "fail:1");
        }
        await().atMost(Duration.ofSeconds(60)).until(() -> marks(id) == 1);
        List<Instant> attempts = listener.attempts(id);
        assertThat(attempts).hasSize(2);
        assertThat(Duration.between(attempts.get(0), attempts.get(1)))
                .as("the retry waited in the retry queue, it was not requeued at once")
                .isGreaterThanOrEqualTo(RETRY_DELAY.minusMillis(50));
        assertThat(listener.rows(id)).isEqualTo(1); // the first attempt's row was rolled back with its mark
        assertThat(messages(TOPOLOGY.deadLetterQueue(), id)).isEmpty();
    }

    @Test
    void poisonMessages_goToTheDeadLetterQueue_withTheReason() throws Exception {
        String id = "pay-" + UUID.randomUUID();
        try (Connection c = connection();
                Channel channel = c.createChannel()) {
            publish(channel, TOPOLOGY.workQueue(), id, "amount=7");
            await().atMost(Duration.ofSeconds(60)).until(() -> marks(id) == 1);
            publish(channel, TOPOLOGY.workQueue(), id, "amount=700"); // the same payment id with another payload
            publish(channel, TOPOLOGY.workQueue(), null, "no-message-id:" + id); // no key at all
        }
        awaitOrExplain(
                () -> deadLetters(id).size() == 2,
                () -> "dead letters: " + deadLetters(id).size() + "; ready in the work queue: "
                        + readyIn(TOPOLOGY.workQueue()) + ", in the retry queue: " + readyIn(TOPOLOGY.retryQueue())
                        + "; marks: " + marks(id) + "; the listener's attempts: " + listener.attempts(id));
        List<GetResponse> dead = deadLetters(id);
        assertThat(dead)
                .extracting(r -> r.getProps()
                        .getHeaders()
                        .get(DeliveryProcessor.DLQ_OUTCOME)
                        .toString())
                .containsOnly("REJECTED");
        assertThat(dead)
                .extracting(r -> r.getProps()
                        .getHeaders()
                        .get(DeliveryProcessor.DLQ_REASON)
                        .toString())
                .anySatisfy(reason -> assertThat(reason).contains("different payload"))
                .anySatisfy(reason ->
                        assertThat(reason).contains("key for namespace").contains("missing or blank"));
        assertThat(listener.rows(id)).isEqualTo(1);
        assertThat(listener.attempts(id)).hasSize(1);
    }

    @Test
    void aRolledBackTransaction_leavesNoMark_andTheCallRunsAgain() {
        String id = "pay-" + UUID.randomUUID();
        org.springframework.amqp.core.Message message = MessageBuilder.withBody(
                        "amount=5".getBytes(StandardCharsets.UTF_8))
                .setMessageId(id)
                .build();
        transactions.executeWithoutResult(status -> {
            listener.onPayment(message);
            status.setRollbackOnly();
        });
        assertThat(marks(id)).isZero();
        assertThat(listener.rows(id)).isZero();
        transactions.executeWithoutResult(status -> listener.onPayment(message));
        transactions.executeWithoutResult(status -> listener.onPayment(message));
        assertThat(listener.attempts(id)).hasSize(2);
        assertThat(listener.rows(id)).isEqualTo(1);
        assertThat(marks(id)).isEqualTo(1);
    }

    /**
     * Waits up to a minute for {@code condition}; when it never holds, fails with {@code state} read then. Twice on CI
     * (a loaded machine) such a wait ran out with nothing logged: the state says which part did not come.
     */
    private static void awaitOrExplain(Callable<Boolean> condition, Callable<String> state) throws Exception {
        try {
            await().atMost(Duration.ofSeconds(60)).until(condition);
        } catch (ConditionTimeoutException e) {
            throw new AssertionError(
                    e.getMessage() + " — " + state.call() + "; consumers on the work queue: "
                            + consumersOn(TOPOLOGY.workQueue()) + "; the listener threads: " + listenerThreads(),
                    e);
        }
    }

    private static long consumersOn(String queue) throws Exception {
        try (Connection c = connection();
                Channel channel = c.createChannel()) {
            return channel.consumerCount(queue);
        }
    }

    /** Where each of the listener container's threads is (a consumer stuck holding unacked deliveries shows here). */
    private static String listenerThreads() {
        StringBuilder threads = new StringBuilder();
        Thread.getAllStackTraces().forEach((thread, stack) -> {
            if (thread.getName().contains("ntContainer") || thread.getName().contains("AMQP Connection")) {
                threads.append("\n").append(thread.getName()).append(" ").append(thread.getState());
                for (int i = 0; i < Math.min(stack.length, 25); i++) {
                    threads.append("\n    at ").append(stack[i]);
                }
            }
        });
        return threads.toString();
    }

    private boolean allApplied(List<String> ids) {
        return ids.stream().allMatch(id -> marks(id) == 1);
    }

    private int marks(String id) {
        return jdbc.queryForObject(
                "SELECT COUNT(*) FROM idem_keys WHERE id = ?", Integer.class, "rabbit-payments:" + id);
    }

    private List<GetResponse> deadLetters(String id) throws Exception {
        return messages(TOPOLOGY.deadLetterQueue(), id);
    }

    /** The messages of {@code queue} about payment {@code id}, read and requeued (the queue is left as it was). */
    private static List<GetResponse> messages(String queue, String id) throws Exception {
        List<GetResponse> found = new ArrayList<>();
        try (Connection c = connection();
                Channel channel = c.createChannel()) {
            GetResponse r;
            while ((r = channel.basicGet(queue, false)) != null) {
                String body = new String(r.getBody(), StandardCharsets.UTF_8);
                if (id.equals(r.getProps().getMessageId()) || body.endsWith(":" + id)) {
                    found.add(r);
                }
            }
        } // closing the channel returns every unacked message to the queue
        return found;
    }

    private static boolean queueEmpty(String queue) throws Exception {
        return readyIn(queue) == 0;
    }

    private static long readyIn(String queue) throws Exception {
        try (Connection c = connection();
                Channel channel = c.createChannel()) {
            return channel.messageCount(queue);
        }
    }
}
