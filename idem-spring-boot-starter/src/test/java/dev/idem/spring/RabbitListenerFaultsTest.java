package dev.idem.spring;

import static dev.idem.spring.RabbitQueues.connection;
import static dev.idem.spring.RabbitQueues.publish;
import static dev.idem.spring.RabbitQueues.ready;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import dev.idem.Outcome;
import dev.idem.rabbitmq.DeliveryProcessor;
import dev.idem.rabbitmq.RabbitTopology;
import dev.idem.spring.rabbitfaults.Deliveries;
import dev.idem.spring.rabbitfaults.FaultsTestApp;
import dev.idem.spring.rabbitfaults.FaultyListeners;
import dev.idem.spring.rabbitfaults.HandledOutcomes;
import dev.idem.testsupport.TestDatabase;
import dev.idem.testsupport.TestServers;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.rabbit.listener.MessageListenerContainer;
import org.springframework.amqp.rabbit.listener.RabbitListenerEndpointRegistry;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * {@link dev.idem.spring.rabbit.IdemRabbitAdvice} under a guarded listener's faults, on the local RabbitMQ and
 * PostgreSQL: an {@code Error}, a failure after the commit, a payload the method's parameter cannot take, a message
 * without its key, a redelivered message. None is acked unapplied, none is applied twice.
 */
class RabbitListenerFaultsTest {
    static final TestDatabase DB = TestDatabase.postgres("spring_rabbit_faults");
    static final RabbitTopology ERRORS = RabbitTopology.forQueue(TestServers.uniquePrefix("faults-errors"));
    static final RabbitTopology AFTER_COMMIT = RabbitTopology.forQueue(TestServers.uniquePrefix("faults-commit"));
    static final RabbitTopology TYPED = RabbitTopology.forQueue(TestServers.uniquePrefix("faults-typed"));
    static final RabbitTopology OUTAGE = RabbitTopology.forQueue(TestServers.uniquePrefix("faults-outage"));
    static final List<RabbitTopology> ALL = List.of(ERRORS, AFTER_COMMIT, TYPED, OUTAGE);
    static final String APPLICATION = TestServers.uniquePrefix("rabbit_faults");

    static ConfigurableApplicationContext context;
    static FaultyListeners listeners;
    static Deliveries deliveries;

    @BeforeAll
    static void start() throws Exception {
        try (Connection c = connection();
                Channel channel = c.createChannel()) {
            for (RabbitTopology t : ALL) {
                t.declare(channel);
            }
        }
        URI rabbit = URI.create(TestServers.rabbitmq().url());
        context = new SpringApplicationBuilder(FaultsTestApp.class)
                .properties(
                        "spring.datasource.url=" + SessionTerminator.url(DB, APPLICATION),
                        "spring.liquibase.enabled=false",
                        "spring.rabbitmq.host=" + rabbit.getHost(),
                        "spring.rabbitmq.port=" + rabbit.getPort(),
                        "spring.rabbitmq.username=guest",
                        "spring.rabbitmq.password=guest",
                        "faults.errors-queue=" + ERRORS.workQueue(),
                        "faults.after-commit-queue=" + AFTER_COMMIT.workQueue(),
                        "faults.typed-queue=" + TYPED.workQueue(),
                        "faults.outage-queue=" + OUTAGE.workQueue(),
                        "idem.rabbit.initial-delay=300ms",
                        // The outage's uncounted waits grow to this, not to the default 30 s: every message is
                        // delivered beyond the bound within the outage case's wait also on a loaded machine.
                        "idem.rabbit.max-delay=1s",
                        "idem.rabbit.jitter=0",
                        "idem.rabbit.max-attempts=3")
                .run();
        listeners = context.getBean(FaultyListeners.class);
        deliveries = context.getBean(Deliveries.class);
    }

    @AfterAll
    static void stop() throws Exception {
        context.getBean(RabbitListenerEndpointRegistry.class).stop();
        context.close();
        try (Connection c = connection();
                Channel channel = c.createChannel()) {
            for (RabbitTopology t : ALL) {
                channel.queueDelete(t.workQueue());
                channel.queueDelete(t.retryQueue());
                channel.queueDelete(t.deadLetterQueue());
                channel.exchangeDelete(t.deadLetterExchange());
            }
        }
        DB.close();
    }

    @Test
    void anError_isNeverAcked_andItsTransactionRollsBack() throws Exception {
        String id = "pay-" + UUID.randomUUID();
        MessageListenerContainer container =
                context.getBean(RabbitListenerEndpointRegistry.class).getListenerContainer("errors");
        publish(ERRORS.workQueue(), id, "amount=10");

        await().atMost(Duration.ofSeconds(30)).until(() -> !container.isRunning());
        await().atMost(Duration.ofSeconds(30)).until(() -> ready(ERRORS.workQueue()) == 1);
        assertThat(rows(id)).as("the row and the mark rolled back").isZero();

        container.start();
        await().atMost(Duration.ofSeconds(30)).until(() -> rows(id) == 1 && ready(ERRORS.workQueue()) == 0);
        assertThat(listeners.attempts(id)).isEqualTo(2);
        assertThat(ready(ERRORS.retryQueue()) + ready(ERRORS.deadLetterQueue())).isZero();
    }

    @Test
    void aFailureAfterTheCommit_isRetried_andTheCopyIsADuplicate() throws Exception {
        String id = "pay-" + UUID.randomUUID();
        publish(AFTER_COMMIT.workQueue(), id, "amount=10");

        HandledOutcomes outcomes = context.getBean(HandledOutcomes.class);
        await().atMost(Duration.ofSeconds(30))
                .until(() -> outcomes.count("faults-after-commit", Outcome.Type.DUPLICATE) == 1);
        assertThat(rows(id)).isEqualTo(1);
        assertThat(listeners.attempts(id)).as("the retry copy was a duplicate").isEqualTo(1);
        assertThat(ready(AFTER_COMMIT.workQueue()) + ready(AFTER_COMMIT.retryQueue()))
                .isZero();
        assertThat(ready(AFTER_COMMIT.deadLetterQueue())).isZero();
    }

    @Test
    void aPayloadTheParameterCannotTake_isDeadLetteredAtOnce_withTheReason() throws Exception {
        String id = "pay-" + UUID.randomUUID();
        publish(TYPED.workQueue(), id, "not a number");

        await().atMost(Duration.ofSeconds(30)).until(() -> ready(TYPED.deadLetterQueue()) == 1);
        GetResponse dead = take(TYPED.deadLetterQueue());
        assertThat(dead.getProps().getHeaders().get(DeliveryProcessor.DLQ_OUTCOME))
                .hasToString("REJECTED");
        assertThat(dead.getProps().getHeaders().get(DeliveryProcessor.DLQ_ATTEMPTS))
                .as("dead-lettered on its first attempt")
                .isEqualTo(1);
        assertThat(listeners.attempts(id)).isZero();
    }

    @Test
    void aMessageWithoutItsKey_isDeadLettered_withTheReason() throws Exception {
        publish(AFTER_COMMIT.workQueue(), null, "no key");

        await().atMost(Duration.ofSeconds(30)).until(() -> ready(AFTER_COMMIT.deadLetterQueue()) == 1);
        GetResponse dead = take(AFTER_COMMIT.deadLetterQueue());
        assertThat(dead.getProps().getHeaders().get(DeliveryProcessor.DLQ_OUTCOME))
                .hasToString("REJECTED");
        assertThat(dead.getProps().getHeaders().get(DeliveryProcessor.DLQ_REASON))
                .asString()
                .containsIgnoringCase("key");
        assertThat(ready(AFTER_COMMIT.workQueue()) + ready(AFTER_COMMIT.retryQueue()))
                .isZero();
    }

    @Test
    void aRedeliveredMessage_thatWasNeverApplied_isApplied() throws Exception {
        String id = "pay-" + UUID.randomUUID();
        MessageListenerContainer container =
                context.getBean(RabbitListenerEndpointRegistry.class).getListenerContainer("typed");
        container.stop();
        try (Connection c = connection()) {
            Channel channel = c.createChannel();
            publish(TYPED.workQueue(), id, "12");
            await().atMost(Duration.ofSeconds(10)).until(() -> ready(TYPED.workQueue()) == 1);
            assertThat(channel.basicGet(TYPED.workQueue(), false)).isNotNull();
            channel.close(); // unacked: back to the queue, flagged redelivered
        }
        container.start();

        await().atMost(Duration.ofSeconds(30)).until(() -> rows(id) == 1 && ready(TYPED.workQueue()) == 0);
        assertThat(listeners.attempts(id)).isEqualTo(1);
    }

    @Test
    void aDatabaseEndingEverySessionMidMethod_deadLettersNothing_andAppliesEachMessageOnceAfterwards()
            throws Exception {
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 9; i++) {
            ids.add("outage-" + UUID.randomUUID());
        }
        try (SessionTerminator terminator = SessionTerminator.start(DB, APPLICATION)) {
            for (String id : ids) {
                publish(OUTAGE.workQueue(), id, "amount=1");
            }
            // Messages delivered beyond the bound (3) while sessions end: each wait went uncounted. One that a slow
            // terminator let through between two of its rounds is applied, and delivered no more.
            await().atMost(Duration.ofSeconds(120))
                    .pollInterval(Duration.ofMillis(200))
                    .until(() -> ready(OUTAGE.deadLetterQueue()) > 0
                            || ids.stream().allMatch(id -> deliveries.of(id) > 4 || rows(id) == 1));
            assertThat(terminator.terminated()).isPositive();
            assertThat(ids).anyMatch(id -> deliveries.of(id) > 4);
        }
        await().atMost(Duration.ofSeconds(60)).until(() -> ids.stream().allMatch(id -> rows(id) == 1));
        assertThat(ready(OUTAGE.deadLetterQueue())).isZero();
        for (String id : ids) {
            assertThat(rows(id)).as(id).isEqualTo(1);
        }
    }

    /** Read with the test's own pool: the application's sessions are the ones the outage ends. */
    private static int rows(String id) {
        return new JdbcTemplate(DB.dataSource())
                .queryForObject("SELECT COUNT(*) FROM ledger WHERE payment_id = ?", Integer.class, id);
    }

    private static GetResponse take(String queue) throws Exception {
        try (Connection c = connection();
                Channel channel = c.createChannel()) {
            GetResponse r = channel.basicGet(queue, true);
            assertThat(r).as("a message in %s", queue).isNotNull();
            return r;
        }
    }
}
