package dev.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.RetryPolicy;
import dev.idem.testkit.TcpProxy;
import dev.idem.testsupport.DebitGuard;
import dev.idem.testsupport.PaymentBank;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Cause 1: the broker's acknowledgement is lost and the producer sends again, so the topic holds two copies. The
 * producer talks to the broker through a {@link TcpProxy} that swallows the broker's responses.
 */
class ProducerRetryDuplicateTest {
    static PaymentBank bank;

    @BeforeAll
    static void setUp() {
        bank = new PaymentBank("ProducerRetryDuplicateTest");
    }

    @AfterAll
    static void tearDown() {
        bank.close();
    }

    @AfterEach
    void healProxy() {
        TcpProxy proxy = KafkaFixture.kafka().proxy();
        proxy.blackholeAll(false);
        proxy.dropAllConnections();
    }

    @Test
    void lostAck_withIdempotenceOff_producerRetryLeavesTwoCopies_everyGuardDebitsOnce() throws Exception {
        String topic = KafkaFixture.topic("lostack", 1);
        TcpProxy proxy = KafkaFixture.kafka().proxy();
        try (KafkaProducer<String, String> producer = KafkaFixture.producer(
                KafkaFixture.kafka().proxiedBootstrapServers(),
                Map.of(
                        ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false,
                        ProducerConfig.RETRIES_CONFIG, 10,
                        ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 1,
                        ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 1000,
                        ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 20_000,
                        ProducerConfig.RETRY_BACKOFF_MS_CONFIG, 100))) {
            KafkaFixture.send(producer, topic, 0, "warmup", "warmup:0");
            proxy.blackholeExisting();
            KafkaFixture.send(producer, topic, 0, "pay-1", "acc:100");
        }

        assertThat(copiesOf(topic, "pay-1"))
                .as("the lost ack made the producer write twice")
                .isEqualTo(2);
        assertEffects(topic, "acc", 100);
    }

    @Test
    void appResendAfterTimeout_withIdempotenceOn_leavesTwoCopies_everyGuardDebitsOnce() throws Exception {
        String topic = KafkaFixture.topic("resend", 1);
        TcpProxy proxy = KafkaFixture.kafka().proxy();
        AtomicInteger resends = new AtomicInteger();
        try (KafkaProducer<String, String> producer = KafkaFixture.producer(
                KafkaFixture.kafka().proxiedBootstrapServers(),
                Map.of(
                        ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 1000,
                        ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 2000))) {
            KafkaFixture.send(producer, topic, 0, "warmup", "warmup:0");
            proxy.blackholeAll(true);
            ProducerRecord<String, String> record =
                    KafkaProducers.withKey(new ProducerRecord<>(topic, 0, null, "acc:70"), "pay-2");
            KafkaProducers.sendWithRetry(
                    producer,
                    record,
                    RetryPolicy.builder()
                            .initialDelay(Duration.ofMillis(50))
                            .multiplier(1.0)
                            .maxDelay(Duration.ofMillis(50))
                            .maxAttempts(3)
                            .jitter(0.0)
                            .build(),
                    Duration.ofSeconds(10),
                    (attempt, failure) -> {
                        resends.incrementAndGet();
                        proxy.blackholeAll(false);
                        proxy.dropAllConnections();
                    });
        }

        assertThat(resends).as("the first send timed out and was resent").hasValue(1);
        assertThat(copiesOf(topic, "pay-2"))
                .as("idempotence does not cover an application resend")
                .isEqualTo(2);
        assertEffects(topic, "acc", 70);
    }

    /** An unguarded consumer debits every copy; a consumer with either guard debits once and commits every copy. */
    private static void assertEffects(String topic, String account, long amount) throws Exception {
        try (DebitGuard unguarded = DebitGuard.unguarded(bank)) {
            assertThat(consume(topic, "unguarded", unguarded, account))
                    .as("unguarded effects")
                    .isEqualTo(2);
        }
        for (GuardKind kind : GuardKind.values()) {
            String mode = kind.name().toLowerCase(Locale.ROOT);
            try (DebitGuard guard = kind.open(bank, topic + "-" + mode)) {
                assertThat(consume(topic, mode, guard, account))
                        .as(kind + " effects")
                        .isEqualTo(1);
            }
            assertThat(bank.balance(mode + topic + account)).isEqualTo(1000 - amount);
        }
    }

    /** Consumes every copy in {@code topic} with a group of its own; returns the ledger rows of {@code account}. */
    private static long consume(String topic, String mode, DebitGuard guard, String account) {
        String prefix = mode + topic;
        bank.open(prefix + account, 1000);
        bank.open(prefix + "warmup", 0);
        String group = topic + "-" + mode;
        try (var consumer = KafkaFixture.consumer(group, topic)
                .handler((key, record) -> {
                    String[] debit = record.value().split(":");
                    return guard.debit(key, prefix + debit[0], Long.parseLong(debit[1]));
                })
                .build()
                .start()) {
            KafkaFixture.awaitAllCommitted(group, topic);
        }
        return bank.ledgerRows(prefix + account);
    }

    private static long copiesOf(String topic, String key) {
        List<ConsumerRecord<byte[], byte[]>> all = KafkaFixture.readAll(topic);
        return all.stream()
                .filter(r -> key.equals(KafkaFixture.header(r, KafkaProducers.KEY_HEADER)))
                .count();
    }
}
