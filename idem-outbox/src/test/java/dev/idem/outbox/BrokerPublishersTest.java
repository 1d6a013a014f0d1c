package dev.idem.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import dev.idem.RetryPolicy;
import dev.idem.kafka.KafkaProducers;
import dev.idem.nats.NatsProducers;
import dev.idem.outbox.kafka.KafkaOutboxPublisher;
import dev.idem.outbox.nats.NatsOutboxPublisher;
import dev.idem.outbox.rabbitmq.RabbitOutboxPublisher;
import dev.idem.outbox.rocketmq.RocketMQOutboxPublisher;
import dev.idem.outbox.spi.OutboxPublisher;
import dev.idem.outbox.spi.OutboxRecord;
import dev.idem.rabbitmq.RabbitPublisher;
import dev.idem.rocketmq.KeyExtractor;
import dev.idem.rocketmq.RocketMQProducers;
import dev.idem.testsupport.EmbeddedKafka;
import dev.idem.testsupport.EmbeddedRocketMQ;
import dev.idem.testsupport.TestDatabase;
import dev.idem.testsupport.TestServers;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.Nats;
import io.nats.client.PullSubscribeOptions;
import io.nats.client.api.StreamConfiguration;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Each publisher against its real broker: the relay's records arrive with the message id where the consumer's guard
 * reads its key, the ordering key, the headers and the payload; a record the broker refuses is parked.
 */
class BrokerPublishersTest {
    private static TestDatabase db;

    @BeforeAll
    static void database() {
        db = TestDatabase.h2("BrokerPublishersTest");
    }

    @AfterAll
    static void close() {
        db.close();
    }

    private static String table(String name) {
        String table = TestServers.uniquePrefix(name);
        OutboxSchema.create(db.dataSource(), table);
        return table;
    }

    private static List<String> send(String table, String destination, String... payloads) throws Exception {
        return sendFor(table, destination, "order-7", payloads);
    }

    /** Sends {@code payloads} for {@code key}, each with header {@code type=Paid}, in one transaction. */
    private static List<String> sendFor(String table, String destination, String key, String... payloads)
            throws Exception {
        List<OutboxMessage> messages = new ArrayList<>();
        for (String p : payloads) {
            messages.add(OutboxMessage.to(destination)
                    .key(key)
                    .header("type", "Paid")
                    .payload(p));
        }
        return send(table, messages);
    }

    private static List<String> send(String table, List<OutboxMessage> messages) throws Exception {
        Outbox outbox = Outbox.builder().table(table).build();
        List<String> ids = new ArrayList<>();
        try (Connection c = db.connection()) {
            c.setAutoCommit(false);
            for (OutboxMessage m : messages) {
                ids.add(outbox.send(c, m));
            }
            c.commit();
        }
        return ids;
    }

    private static OutboxRelay relay(String table, OutboxPublisher publisher, int maxRefusals) {
        return relayBuilder(table, publisher, maxRefusals).build();
    }

    private static OutboxRelay.Builder relayBuilder(String table, OutboxPublisher publisher, int maxRefusals) {
        return OutboxRelay.builder(db.dataSource(), publisher)
                .table(table)
                .publishTimeout(Duration.ofSeconds(10))
                .retryPolicy(RetryPolicy.builder()
                        .initialDelay(Duration.ofMillis(1))
                        .maxAttempts(maxRefusals)
                        .jitter(0)
                        .build());
    }

    /** A started producer on the JVM's in-process broker, with the settings a guarded consumer's producer uses. */
    private static DefaultMQProducer rocketProducer(String group) throws MQClientException {
        DefaultMQProducer producer = new DefaultMQProducer(group);
        producer.setNamesrvAddr(EmbeddedRocketMQ.shared().nameServer());
        producer.setInstanceName(group);
        RocketMQProducers.applyRecommendedSettings(producer);
        producer.setMaxMessageSize(2000);
        producer.setSendMsgTimeout(1000);
        producer.start();
        return producer;
    }

    /** The key idem-rocketmq's guard reads from {@code message} when told where the producer stamped it. */
    private static String rocketKey(MessageExt message) {
        try {
            return Objects.requireNonNull(
                    KeyExtractor.property(RocketMQProducers.KEY_PROPERTY).extract(message), "no key property");
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void kafka_recordsCarryTheMessageIdInTheKeyHeader_theKeyAndHeaders_andATooLargeRecordIsParked() throws Exception {
        EmbeddedKafka kafka = EmbeddedKafka.shared();
        String topic = TestServers.uniquePrefix("outbox");
        kafka.createTopic(topic, 3);
        String table = table("kafka");
        List<String> ids = send(table, topic, "first", "second", "x".repeat(5000));
        try (KafkaOutboxPublisher publisher = KafkaOutboxPublisher.create(
                        Map.of("bootstrap.servers", kafka.bootstrapServers(), "max.request.size", 2000));
                OutboxRelay relay = relay(table, publisher, 1)) {
            await().atMost(Duration.ofSeconds(30)).until(() -> {
                relay.relayOnce();
                return relay.stats().parked() == 1;
            });
            assertThat(relay.parked(1).get(0).reason()).contains("RecordTooLarge");
            assertThat(relay.stats().unsent()).isEqualTo(1);
        }
        List<ConsumerRecord<String, byte[]>> records = new ArrayList<>();
        try (KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(
                Map.of(
                        "bootstrap.servers",
                        kafka.bootstrapServers(),
                        "group.id",
                        topic,
                        "auto.offset.reset",
                        "earliest"),
                new StringDeserializer(),
                new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(topic));
            await().atMost(Duration.ofSeconds(30)).until(() -> {
                consumer.poll(Duration.ofMillis(200)).forEach(records::add);
                return records.size() >= 2;
            });
        }
        assertThat(records)
                .extracting(r -> new String(r.value(), StandardCharsets.UTF_8))
                .containsExactly("first", "second");
        assertThat(records).extracting(ConsumerRecord::key).containsOnly("order-7");
        assertThat(records)
                .extracting(r -> new String(
                        r.headers().lastHeader(KafkaProducers.KEY_HEADER).value(), StandardCharsets.UTF_8))
                .containsExactly(ids.get(0), ids.get(1));
        assertThat(records)
                .extracting(r -> new String(r.headers().lastHeader("type").value(), StandardCharsets.UTF_8))
                .containsOnly("Paid");
    }

    @Test
    void nats_messagesCarryTheMessageIdInNatsMsgId_andARepublicationIsDroppedByTheStream() throws Exception {
        String stream = TestServers.uniquePrefix("outbox");
        String table = table("nats");
        List<String> ids = send(table, stream + ".paid", "first", "second");
        try (io.nats.client.Connection nc = Nats.connect(TestServers.nats().url())) {
            nc.jetStreamManagement()
                    .addStream(StreamConfiguration.builder()
                            .name(stream)
                            .subjects(stream + ".>")
                            .build());
            try {
                NatsOutboxPublisher publisher = NatsOutboxPublisher.of(nc.jetStream());
                try (OutboxRelay relay = relay(table, publisher, 3)) {
                    assertThat(relay.relayOnce()).isEqualTo(2);
                }
                // The relay crashed before "sent" and the next one publishes the first message again:
                var again = new OutboxRecord(
                        1,
                        ids.get(0),
                        stream + ".paid",
                        "order-7",
                        Map.of(),
                        "first".getBytes(),
                        java.time.Instant.now());
                publisher.publish(again).join();
                JetStreamSubscription sub = nc.jetStream()
                        .subscribe(stream + ".>", PullSubscribeOptions.builder().build());
                List<Message> messages = sub.fetch(10, Duration.ofSeconds(2));
                assertThat(messages)
                        .extracting(m -> m.getHeaders().getFirst(NatsProducers.MSG_ID))
                        .containsExactly(ids.get(0), ids.get(1));
                assertThat(messages)
                        .extracting(m -> m.getHeaders().getFirst("type"))
                        .containsOnly("Paid");
            } finally {
                nc.jetStreamManagement().deleteStream(stream);
            }
        }
    }

    @Test
    void rabbitmq_messagesCarryTheMessageIdProperty_andAnUnroutableMessageIsParked() throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(TestServers.rabbitmq().url());
        String queue = TestServers.uniquePrefix("outbox");
        String table = table("rabbit");
        List<String> ids = send(table, queue, "first", "second");
        send(table, queue + "-nowhere", "unroutable");
        try (com.rabbitmq.client.Connection connection = factory.newConnection();
                Channel channel = connection.createChannel();
                RabbitPublisher rabbit = RabbitPublisher.builder(factory).build()) {
            channel.queueDeclare(queue, true, false, true, null);
            try (OutboxRelay relay = relay(table, RabbitOutboxPublisher.of(rabbit, ""), 1)) {
                await().atMost(Duration.ofSeconds(30)).until(() -> {
                    relay.relayOnce();
                    return relay.stats().parked() == 1;
                });
                assertThat(relay.parked(1).get(0).destination()).isEqualTo(queue + "-nowhere");
            }
            List<GetResponse> got = new ArrayList<>();
            for (GetResponse r; (r = channel.basicGet(queue, true)) != null; ) {
                got.add(r);
            }
            assertThat(got).extracting(r -> r.getProps().getMessageId()).containsExactly(ids.get(0), ids.get(1));
            assertThat(got)
                    .extracting(r -> String.valueOf(r.getProps().getHeaders().get("type")))
                    .containsOnly("Paid");
        }
    }

    @Test
    void rocketmq_messagesCarryTheMessageIdInTheKeyProperty_eachKeyStaysOnOneQueueInOrder_illegalOnesAreParked()
            throws Exception {
        EmbeddedRocketMQ broker = EmbeddedRocketMQ.shared();
        String topic = TestServers.uniquePrefix("outbox");
        broker.createTopic(topic, 4);
        String table = table("rocket");
        Map<String, List<String>> idsByKey = new LinkedHashMap<>();
        for (int k = 0; k < 6; k++) {
            idsByKey.put("order-" + k, sendFor(table, topic, "order-" + k, "first", "second", "third"));
        }
        sendFor(table, topic, "order-big", "x".repeat(5000)); // over the producer's maxMessageSize
        send(
                table,
                List.of(OutboxMessage.to(topic)
                        .key("order-cut")
                        .header("note", "a\u0002b") // RocketMQ's property separator, which it does not escape
                        .payload("cut")));
        DefaultMQProducer producer = rocketProducer(TestServers.uniquePrefix("outbox-p"));
        try (OutboxRelay relay = relay(table, RocketMQOutboxPublisher.of(producer), 1)) {
            await().atMost(Duration.ofSeconds(60)).until(() -> {
                relay.relayOnce();
                return relay.stats().parked() == 2 && relay.stats().unsent() == 2;
            });
            assertThat(relay.parked(2))
                    .extracting(ParkedMessage::reason)
                    .anySatisfy(r -> assertThat(r).contains("body size"))
                    .anySatisfy(r -> assertThat(r).contains("U+0002"));
        } finally {
            producer.shutdown();
        }
        List<MessageExt> stored = broker.messages(topic);
        assertThat(stored)
                .extracting(BrokerPublishersTest::rocketKey)
                .as("each published once, its id where idem-rocketmq's KeyExtractor.property(KEY_PROPERTY) reads it")
                .containsExactlyInAnyOrderElementsOf(
                        idsByKey.values().stream().flatMap(List::stream).toList());
        assertThat(stored).extracting(m -> m.getUserProperty("type")).containsOnly("Paid");
        Set<Integer> queues = new HashSet<>();
        idsByKey.forEach((key, ids) -> {
            List<MessageExt> ofKey = stored.stream()
                    .filter(m -> ids.contains(rocketKey(m)))
                    .sorted(Comparator.comparingLong(MessageExt::getQueueOffset))
                    .toList();
            assertThat(ofKey)
                    .extracting(MessageExt::getQueueId)
                    .as(key + " on one queue")
                    .hasSize(3)
                    .containsOnly(ofKey.get(0).getQueueId());
            assertThat(ofKey)
                    .extracting(BrokerPublishersTest::rocketKey)
                    .as(key + " in order")
                    .containsExactlyElementsOf(ids);
            assertThat(ofKey)
                    .extracting(m -> new String(m.getBody(), StandardCharsets.UTF_8))
                    .containsExactly("first", "second", "third");
            queues.add(ofKey.get(0).getQueueId());
        });
        assertThat(queues).as("the keys spread over the topic's queues").hasSizeGreaterThan(1);
    }

    @Test
    void rocketmq_aLostAnswerLeavesTheMessageUnsent_retriedWithoutCounting_andEveryCopyCarriesItsId() throws Exception {
        EmbeddedRocketMQ broker = EmbeddedRocketMQ.shared();
        String topic = TestServers.uniquePrefix("outbox");
        broker.createTopic(topic, 2);
        String table = table("rocketlost");
        List<String> ids = send(table, topic, "first");
        List<Boolean> refusedFlags = new CopyOnWriteArrayList<>();
        OutboxListener failures = new OutboxListener() {
            @Override
            public void publishFailed(OutboxRecord record, Throwable failure, boolean refused, Instant retryAt) {
                refusedFlags.add(refused);
            }
        };
        DefaultMQProducer producer = rocketProducer(TestServers.uniquePrefix("outbox-p"));
        try (OutboxRelay relay = relayBuilder(table, RocketMQOutboxPublisher.of(producer), 1)
                .listener(failures)
                .build()) {
            broker.proxy().blackholeAll(true); // the broker stores what it is sent; its answers are lost
            try {
                assertThat(relay.relayOnce()).isZero();
            } finally {
                broker.proxy().blackholeAll(false);
            }
            assertThat(refusedFlags)
                    .as("a timeout, not a refusal: it never parks")
                    .containsExactly(false);
            assertThat(relay.stats().unsent()).isEqualTo(1);
            assertThat(relay.stats().parked()).isZero();
            await().atMost(Duration.ofSeconds(60)).until(() -> {
                relay.relayOnce();
                return relay.stats().unsent() == 0;
            });
        } finally {
            producer.shutdown();
        }
        assertThat(broker.messages(topic))
                .extracting(BrokerPublishersTest::rocketKey)
                .as("the copy whose answer was lost and the republication: one id, which the next guard drops")
                .isNotEmpty()
                .containsOnly(ids.get(0));
    }
}
