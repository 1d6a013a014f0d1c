package dev.idem.kafka;

import dev.idem.RetryPolicy;
import dev.idem.spi.KeyBytes;
import dev.idem.testkit.AdapterContract;
import dev.idem.testkit.Routing;
import dev.idem.testkit.TestMessage;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;

/**
 * The plain Kafka runner passes the {@link AdapterContract} on the embedded broker: a topic of two partitions and its
 * dead-letter topic per scenario, the key in {@link KafkaProducers#KEY_HEADER}, a copy's route as the partition it
 * is sent to, and messages without a route to the partitions in turn: within one partition Kafka keeps a producer's
 * order, so a message overtakes another (the cancel before the create) only on another partition, and the runner,
 * keeping each partition's order, must let it wait there without holding the other partition back. A crash is what a killed process leaves: the handler's answer is replaced by an {@link Error}, which
 * stops the runner at once without committing.
 */
@Execution(ExecutionMode.CONCURRENT) // each scenario has its own destination, consumers and ledger
class KafkaAdapterContractTest extends AdapterContract {
    private static final int PARTITIONS = 2;

    private final KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(
            Map.of("bootstrap.servers", KafkaFixture.kafka().bootstrapServers(), "acks", "all"),
            new ByteArraySerializer(),
            new ByteArraySerializer());
    private final Routing routing = new Routing(PARTITIONS);
    private String topic = "";

    /** The group protocol the consumers run: {@code classic} here, {@code consumer} (KIP-848) in {@link KafkaConsumerProtocolContractTest}. */
    String protocol() {
        return "classic";
    }

    @AfterEach
    void closeProducer() {
        producer.close();
    }

    @Override
    protected void createDestination(String name) {
        topic = KafkaFixture.topic(name, PARTITIONS);
    }

    @Override
    protected RunningConsumer startConsumer(ContractHandler handler, RetryPolicy retryPolicy) {
        AtomicBoolean crashed = new AtomicBoolean();
        var consumer = IdempotentKafkaConsumer.builder(KafkaFixture.consumerProps(topic + "-g", protocol()))
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .retryPolicy(retryPolicy)
                .handler((key, record) -> {
                    if (crashed.get()) {
                        throw new ProcessKilled();
                    }
                    var outcome = handler.handle(key, record.value().getBytes(StandardCharsets.UTF_8));
                    if (crashed.get()) {
                        throw new ProcessKilled();
                    }
                    return outcome;
                })
                .build()
                .start();
        return RunningConsumer.of(consumer::close, () -> crashed.set(true));
    }

    @Override
    protected void publish(TestMessage message) throws Exception {
        RecordHeaders headers = new RecordHeaders();
        if (message.keyBytes() != null) {
            headers.add(KafkaProducers.KEY_HEADER, message.keyBytes());
        }
        message.headers().forEach(headers::add);
        int partition = routing.slotOf(message);
        producer.send(new ProducerRecord<>(topic, partition, (byte[]) null, message.payload(), headers))
                .get(30, TimeUnit.SECONDS);
    }

    @Override
    protected List<DeadLetter> deadLetters() {
        return KafkaFixture.readAll(topic + "-dlt").stream()
                .map(record ->
                        new DeadLetter(key(record), KafkaFixture.header(record, IdempotentKafkaConsumer.DLT_REASON)))
                .toList();
    }

    private static String key(ConsumerRecord<byte[], byte[]> record) {
        Header key = record.headers().lastHeader(KafkaProducers.KEY_HEADER);
        return key == null ? null : KeyBytes.exactKey(key.value());
    }

    @Override
    protected void replayDeadLetters() throws Exception {
        for (ConsumerRecord<byte[], byte[]> dead : KafkaFixture.readAll(topic + "-dlt")) {
            producer.send(new ProducerRecord<>(topic, null, dead.key(), dead.value(), dead.headers()))
                    .get(30, TimeUnit.SECONDS);
        }
    }

    /** The runner's own dead-letter headers, claiming the record was already tried to the bound and given up. */
    @Override
    protected Map<String, byte[]> hostileHeaders() {
        Map<String, byte[]> headers = new HashMap<>();
        headers.put(IdempotentKafkaConsumer.DLT_ATTEMPTS, utf8("999"));
        headers.put(IdempotentKafkaConsumer.DLT_OUTCOME, utf8("REJECTED"));
        headers.put(IdempotentKafkaConsumer.DLT_REASON, utf8("gave up after 999 attempts"));
        headers.put(IdempotentKafkaConsumer.DLT_TOPIC, utf8(topic));
        headers.put(IdempotentKafkaConsumer.DLT_PARTITION, utf8("0"));
        headers.put(IdempotentKafkaConsumer.DLT_OFFSET, utf8("0"));
        return headers;
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** Stands for the process dying: not an exception a handler would catch. */
    private static final class ProcessKilled extends Error {
        private static final long serialVersionUID = 1L;

        ProcessKilled() {
            super("contract: the consumer process was killed");
        }
    }
}
