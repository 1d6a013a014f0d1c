package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Outcome;
import dev.idem.spring.app.OutcomeCounter;
import dev.idem.spring.rocketmqapp.RocketLedger;
import dev.idem.spring.rocketmqapp.RocketPaymentsTestApp;
import dev.idem.testsupport.EmbeddedRocketMQ;
import dev.idem.testsupport.TestDatabase;
import dev.idem.testsupport.TestServers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.store.exception.ConsumeQueueException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * {@code @RocketMQMessageListener} + {@code @Transactional} + {@code @Idempotent} end to end: rocketmq-spring-boot-starter's
 * stock listener container (concurrent, {@code RECONSUME_LATER} on an exception), the in-process RocketMQ broker,
 * PostgreSQL.
 */
@SpringBootTest(classes = RocketPaymentsTestApp.class)
@DirtiesContext
class RocketPaymentsAppTest {
    static final TestDatabase DB = TestDatabase.postgres("spring_rocketmq");
    static final String TOPIC = TestServers.uniquePrefix("springrocket");
    static final String GROUP = TOPIC + "-payments";
    static final int QUEUES = 2;
    static DefaultMQProducer producer;

    @Autowired
    RocketLedger ledger;

    @Autowired
    OutcomeCounter outcomes;

    @Autowired
    JdbcTemplate jdbc;

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        EmbeddedRocketMQ broker = EmbeddedRocketMQ.shared();
        broker.createTopic(TOPIC, QUEUES);
        broker.createGroupTopics(GROUP);
        registry.add("spring.datasource.url", DB::url);
        registry.add("spring.liquibase.enabled", () -> "false");
        registry.add("rocketmq.name-server", broker::nameServer);
        registry.add("payments.topic", () -> TOPIC);
        registry.add("payments.group", () -> GROUP);
    }

    @BeforeAll
    static void startProducer() throws Exception {
        producer = new DefaultMQProducer(TOPIC + "-producer");
        producer.setNamesrvAddr(EmbeddedRocketMQ.shared().nameServer());
        producer.start();
    }

    @AfterAll
    static void stopProducerAndDropDatabase() {
        producer.shutdown();
        DB.close();
    }

    @Test
    void anApplicationResend_withTheSameKeys_isAppliedOnce() throws Exception {
        String id = "pay-" + UUID.randomUUID();
        String first = send(id, "amount=10");
        String resent = send(id, "amount=10"); // a new Message object: a new msgId, the same KEYS
        assertThat(resent).isNotEqualTo(first);
        await().atMost(Duration.ofSeconds(30)).until(RocketPaymentsAppTest::allConsumed);
        // A resend handled while the first copy ran waited as IN_PROGRESS and comes back from %RETRY% (10 s later):
        // the topic's offsets are committed before it is answered DUPLICATE.
        await().atMost(Duration.ofSeconds(60))
                .untilAsserted(() -> assertThat(outcomes.count("rocket-payments", Outcome.Type.DUPLICATE))
                        .isGreaterThanOrEqualTo(1));
        assertThat(ledger.attempts(id)).hasSize(1);
        assertThat(ledger.rows(id)).isEqualTo(1);
        assertThat(marks(id)).isEqualTo(1);
    }

    @Test
    void aFailedAttempt_isRolledBack_reconsumedLater_andAppliedOnce() throws Exception {
        String id = "pay-" + UUID.randomUUID();
        String msgId = send(id, "fail:1");
        await().atMost(Duration.ofSeconds(30)).until(() -> marks(id) == 1);
        assertThat(ledger.attempts(id))
                .as("the same message redelivered from %RETRY% after RECONSUME_LATER")
                .containsExactly(msgId + "#0", msgId + "#1");
        assertThat(ledger.rows(id)).isEqualTo(1); // the first attempt's row was rolled back with its mark
    }

    /** Whether the group's offsets, as the broker holds them, reached the end of every queue. */
    private static boolean allConsumed() throws ConsumeQueueException {
        EmbeddedRocketMQ broker = EmbeddedRocketMQ.shared();
        for (int queue = 0; queue < QUEUES; queue++) {
            if (broker.committedOffset(GROUP, TOPIC, queue) < broker.endOffset(TOPIC, queue)) {
                return false;
            }
        }
        return true;
    }

    private int marks(String id) {
        return jdbc.queryForObject(
                "SELECT COUNT(*) FROM idem_keys WHERE id = ?", Integer.class, "rocket-payments:" + id);
    }

    /** Sends a new message with KEYS {@code id}; its msgId. */
    private static String send(String id, String body) throws Exception {
        Message message = new Message(TOPIC, "pay", id, body.getBytes(StandardCharsets.UTF_8));
        SendResult result = producer.send(message);
        assertThat(result.getSendStatus()).isEqualTo(SendStatus.SEND_OK);
        return result.getMsgId();
    }
}
