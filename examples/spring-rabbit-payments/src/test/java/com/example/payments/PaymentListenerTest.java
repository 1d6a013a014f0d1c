package com.example.payments;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.idem.rabbitmq.RabbitTopology;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Properties;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.rabbit.core.RabbitAdmin;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.amqp.rabbit.listener.RabbitListenerEndpointRegistry;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The whole application against your RabbitMQ (a queue of its own, deleted afterwards) and a database of its own on
 * your PostgreSQL: every payment published twice is debited once; a reused payment id and an unreadable payment are
 * dead-lettered. Counted by SQL.
 */
@SpringBootTest
@DirtiesContext
class PaymentListenerTest {
    private static final int PAYMENTS = 20;
    private static final String QUEUE = "payments-test-" + UUID.randomUUID();
    private static PrivateDatabase database;

    @BeforeAll
    static void createDatabase() throws Exception {
        database = new PrivateDatabase();
    }

    @DynamicPropertySource
    static void servers(DynamicPropertyRegistry registry) {
        registry.add("spring.datasource.url", () -> database.url());
        registry.add("payments.queue", () -> QUEUE);
    }

    @AfterAll
    static void dropDatabase() throws Exception {
        database.close();
    }

    @Autowired
    RabbitTemplate rabbit;

    @Autowired
    RabbitAdmin admin;

    @Autowired
    RabbitTopology topology;

    @Autowired
    JdbcTemplate jdbc;

    @Autowired
    RabbitListenerEndpointRegistry listeners;

    @Test
    void everyPaymentDebitedOnce_resendsIgnored_badOnesDeadLettered() {
        try {
            jdbc.update("INSERT INTO account (id, balance_cents) VALUES ('alice', 100000)");
            for (int i = 1; i <= PAYMENTS; i++) {
                publish("payment-" + i, "alice:" + i * 100);
                publish("payment-" + i, "alice:" + i * 100); // the same message id: a resend
            }
            publish("payment-1", "alice:999"); // the id reused with another amount: REJECTED
            publish("payment-x", "not a payment"); // REJECTED

            // One listener thread (spring-rabbit's default) takes the queue in order: the two bad ones come last.
            await().atMost(Duration.ofSeconds(60)).until(() -> messages(topology.deadLetterQueue()) == 2);

            assertEquals(PAYMENTS, jdbc.queryForObject("SELECT count(*) FROM payment", Long.class));
            assertEquals(PAYMENTS, jdbc.queryForObject("SELECT count(DISTINCT payment_id) FROM payment", Long.class));
            long debited = 100L * PAYMENTS * (PAYMENTS + 1) / 2;
            assertEquals(
                    100000 - debited,
                    jdbc.queryForObject("SELECT balance_cents FROM account WHERE id = 'alice'", Long.class));
            assertEquals(0, messages(QUEUE));
        } finally {
            listeners.stop();
            admin.deleteQueue(topology.workQueue());
            admin.deleteQueue(topology.retryQueue());
            admin.deleteQueue(topology.deadLetterQueue());
            admin.deleteExchange(topology.deadLetterExchange());
        }
    }

    private void publish(String paymentId, String body) {
        MessageProperties properties = new MessageProperties();
        properties.setMessageId(paymentId); // fixed before the first publish, the same on every resend
        rabbit.send("", QUEUE, new Message(body.getBytes(StandardCharsets.UTF_8), properties));
    }

    private int messages(String queue) {
        Properties info = admin.getQueueProperties(queue);
        return info == null ? -1 : ((Number) info.get(RabbitAdmin.QUEUE_MESSAGE_COUNT)).intValue();
    }
}
