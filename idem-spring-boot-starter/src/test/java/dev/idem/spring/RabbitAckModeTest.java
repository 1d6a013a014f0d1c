package dev.idem.spring;

import static dev.idem.spring.RabbitQueues.connection;
import static dev.idem.spring.RabbitQueues.publish;
import static dev.idem.spring.RabbitQueues.ready;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import dev.idem.ConfigurationException;
import dev.idem.rabbitmq.RabbitTopology;
import dev.idem.spring.rabbitack.AckModeListeners;
import dev.idem.spring.rabbitack.AckModeTestApp;
import dev.idem.spring.rabbitapp.RabbitPaymentsTestApp;
import dev.idem.testsupport.TestDatabase;
import dev.idem.testsupport.TestServers;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * {@code @Idempotent} {@code @RabbitListener}s and the container's acknowledge mode, on the local RabbitMQ and
 * PostgreSQL: a guarded listener whose container would ack {@code MANUAL} or {@code NONE} fails the startup with the
 * fix, before it takes a message; the fix (the listener's own {@code ackMode = "AUTO"} in a {@code MANUAL} factory)
 * settles every delivery, and an unguarded {@code MANUAL} listener of the same factory is left alone.
 */
class RabbitAckModeTest {
    static final TestDatabase DB = TestDatabase.postgres("spring_rabbit_ack");
    static final RabbitTopology PAYMENTS = RabbitTopology.forQueue(TestServers.uniquePrefix("springack"));
    static final String NOTICES = TestServers.uniquePrefix("springack-notices");

    @BeforeAll
    static void declareQueues() throws Exception {
        try (Connection c = connection();
                Channel channel = c.createChannel()) {
            PAYMENTS.declare(channel);
            channel.queueDeclare(NOTICES, true, false, false, null);
        }
    }

    @AfterAll
    static void deleteQueuesAndDatabase() throws Exception {
        try (Connection c = connection();
                Channel channel = c.createChannel()) {
            channel.queueDelete(PAYMENTS.workQueue());
            channel.queueDelete(PAYMENTS.retryQueue());
            channel.queueDelete(PAYMENTS.deadLetterQueue());
            channel.exchangeDelete(PAYMENTS.deadLetterExchange());
            channel.queueDelete(NOTICES);
        }
        DB.close();
    }

    @ParameterizedTest
    @ValueSource(strings = {"manual", "none"})
    void guardedListener_inAContainerThatDoesNotAckAuto_failsTheStartup_beforeTakingAMessage(String mode)
            throws Exception {
        String id = "pay-" + UUID.randomUUID();
        try (Connection c = connection();
                Channel channel = c.createChannel()) {
            publish(channel, PAYMENTS.workQueue(), id, "amount=10");
        }
        SpringApplicationBuilder app = application(RabbitPaymentsTestApp.class)
                .properties(
                        "payments.queue=" + PAYMENTS.workQueue(),
                        "spring.rabbitmq.listener.simple.acknowledge-mode=" + mode);

        assertThatThrownBy(() -> app.run().close())
                .satisfies(e -> assertThat(configurationCause(e))
                        .as("the cause of %s", e)
                        .isNotNull()
                        .hasMessageContaining("RabbitPaymentListener.onPayment")
                        .hasMessageContaining("acks in mode " + mode.toUpperCase(Locale.ROOT))
                        .hasMessageContaining("ackMode = \"AUTO\""));
        try (Connection c = connection();
                Channel channel = c.createChannel()) {
            assertThat(channel.messageCount(PAYMENTS.workQueue()))
                    .as("the message is still ready: no consumer took it")
                    .isEqualTo(1);
            channel.queuePurge(PAYMENTS.workQueue());
        }
    }

    @Test
    void ackModeAutoOnTheGuardedListener_inAManualFactory_acksEveryDelivery_andAppliesEachPaymentOnce()
            throws Exception {
        String paid = "pay-" + UUID.randomUUID();
        String failedOnce = "pay-" + UUID.randomUUID();
        try (ConfigurableApplicationContext context = application(AckModeTestApp.class)
                .properties(
                        "ack.payments-queue=" + PAYMENTS.workQueue(),
                        "ack.notices-queue=" + NOTICES,
                        "spring.rabbitmq.listener.simple.acknowledge-mode=manual")
                .run()) {
            AckModeListeners listeners = context.getBean(AckModeListeners.class);
            try (Connection c = connection();
                    Channel channel = c.createChannel()) {
                for (int copy = 0; copy < 3; copy++) {
                    publish(channel, PAYMENTS.workQueue(), paid, "amount=10");
                }
                publish(channel, PAYMENTS.workQueue(), failedOnce, "fail:1");
                publish(channel, PAYMENTS.workQueue(), null, "no key"); // dead-lettered at once
                publish(channel, NOTICES, "notice-1", "hello");
            }
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> listeners.rows(paid) == 1
                            && listeners.rows(failedOnce) == 1
                            && listeners.notices().size() == 1
                            && ready(PAYMENTS.deadLetterQueue()) == 1
                            && ready(PAYMENTS.workQueue()) == 0
                            && ready(PAYMENTS.retryQueue()) == 0);
            assertThat(listeners.attempts(paid))
                    .as("the two copies were duplicates")
                    .isEqualTo(1);
            assertThat(listeners.attempts(failedOnce)).isEqualTo(2);
        } // closing the channels returns every unacked delivery to its queue
        assertThat(List.of(ready(PAYMENTS.workQueue()), ready(PAYMENTS.retryQueue()), ready(NOTICES)))
                .as("nothing was left unacked")
                .containsOnly(0L);
        assertThat(ready(PAYMENTS.deadLetterQueue())).isEqualTo(1);
        try (Connection c = connection();
                Channel channel = c.createChannel()) {
            channel.queuePurge(PAYMENTS.deadLetterQueue());
        }
    }

    private static SpringApplicationBuilder application(Class<?> app) {
        URI rabbit = URI.create(TestServers.rabbitmq().url());
        return new SpringApplicationBuilder(app)
                .properties(
                        "spring.datasource.url=" + DB.url(),
                        "spring.liquibase.enabled=false",
                        "spring.rabbitmq.host=" + rabbit.getHost(),
                        "spring.rabbitmq.port=" + rabbit.getPort(),
                        "spring.rabbitmq.username=guest",
                        "spring.rabbitmq.password=guest",
                        "idem.rabbit.initial-delay=300ms",
                        "idem.rabbit.jitter=0",
                        "idem.rabbit.max-attempts=3");
    }

    private static @Nullable ConfigurationException configurationCause(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof ConfigurationException c) {
                return c;
            }
        }
        return null;
    }
}
