package dev.idem.demo.samples;

import dev.idem.Delivery;
import dev.idem.Fingerprint;
import dev.idem.Outcome;
import dev.idem.jdbc.JdbcInbox;
import dev.idem.kafka.IdempotentKafkaConsumer;
import dev.idem.nats.IdempotentNatsConsumer;
import dev.idem.rabbitmq.IdempotentRabbitConsumer;
import dev.idem.rabbitmq.RabbitTopology;
import dev.idem.rocketmq.IdempotentRocketMQ;
import io.nats.client.Nats;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;

/**
 * Guarded by Idem, for the lab's self-test: {@link IdempotentKafkaConsumer}, {@link IdempotentNatsConsumer}, {@link
 * IdempotentRabbitConsumer} or {@link IdempotentRocketMQ} with a {@link JdbcInbox} whose mark commits in the transaction of the ledger row, keyed by the payment id. Must pass
 * every fault the lab makes.
 */
public final class InboxConsumer {
    private InboxConsumer() {}

    public static void main(String[] args) {
        Crash.onException(() -> run(SampleArgs.parse(args)));
    }

    private static void run(SampleArgs a) throws Exception {
        Ledger ledger = new Ledger(a.get("jdbc"));
        JdbcInbox inbox = inbox(ledger);
        AutoCloseable consumer = switch (a.broker()) {
            case "nats" -> nats(a, inbox);
            case "rabbitmq" -> rabbit(a, inbox);
            case "rocketmq" -> rocketmq(a, inbox);
            default -> kafka(a, inbox);
        };
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                consumer.close();
            } catch (Exception e) {
                // ending anyway
            }
        }));
        new CountDownLatch(1).await();
    }

    /** Several copies start at once, each creating the table if missing: one wins, the others find it. */
    private static JdbcInbox inbox(Ledger ledger) throws InterruptedException {
        for (int attempt = 1; ; attempt++) {
            try {
                return JdbcInbox.builder(ledger.dataSource())
                        .namespace("idem-lab-samples")
                        .createTableIfMissing(true)
                        .build();
            } catch (RuntimeException e) {
                if (attempt == 5) {
                    throw e;
                }
                Thread.sleep(200L * attempt);
            }
        }
    }

    private static Outcome handle(JdbcInbox inbox, String key, String value) {
        Payment p = Payment.of(key, value);
        return inbox.handle(Delivery.of(key, Fingerprint.of(value)), connection -> {
            Ledger.apply(connection, p);
            return Outcome.processed();
        });
    }

    private static AutoCloseable kafka(SampleArgs a, JdbcInbox inbox) {
        return IdempotentKafkaConsumer.builder(Map.of(
                        "bootstrap.servers",
                        a.get("server"),
                        "group.id",
                        a.get("group"),
                        "auto.offset.reset",
                        "earliest",
                        "max.poll.records",
                        20,
                        "session.timeout.ms",
                        6000,
                        "heartbeat.interval.ms",
                        1000))
                .topics(a.get("topic"))
                .keyFrom(dev.idem.kafka.KeyExtractor.header("payment-id"))
                .handler((key, record) -> handle(inbox, key, record.value()))
                .build()
                .start();
    }

    private static AutoCloseable nats(SampleArgs a, JdbcInbox inbox) throws Exception {
        io.nats.client.Connection connection = Nats.connect(a.get("server"));
        return IdempotentNatsConsumer.builder(connection)
                .consumer(a.get("stream"), a.get("group"))
                .deadLetterSubject(a.get("dead-letter-subject"))
                .keyFrom(dev.idem.nats.KeyExtractor.header("payment-id"))
                .handler((key, message) -> handle(inbox, key, new String(message.getData(), StandardCharsets.UTF_8)))
                .batchSize(1)
                .fetchWait(Duration.ofMillis(500))
                .build()
                .start();
    }

    private static AutoCloseable rocketmq(SampleArgs a, JdbcInbox inbox) throws Exception {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(a.get("group"));
        consumer.setNamesrvAddr(a.get("server"));
        consumer.setInstanceName(a.get("group") + "-" + ProcessHandle.current().pid());
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setPersistConsumerOffsetInterval(500);
        consumer.setConsumeThreadMin(2);
        consumer.setConsumeThreadMax(2);
        consumer.subscribe(a.get("topic"), "*");
        consumer.registerMessageListener(IdempotentRocketMQ.builder(consumer)
                .keyFrom(dev.idem.rocketmq.KeyExtractor.keys())
                .handler((key, message) -> handle(inbox, key, new String(message.getBody(), StandardCharsets.UTF_8)))
                .build()
                .concurrently());
        consumer.start();
        return consumer::shutdown;
    }

    private static AutoCloseable rabbit(SampleArgs a, JdbcInbox inbox) throws Exception {
        com.rabbitmq.client.ConnectionFactory factory = new com.rabbitmq.client.ConnectionFactory();
        factory.setUri(a.get("server"));
        return IdempotentRabbitConsumer.builder(factory.newConnection(), RabbitTopology.forQueue(a.get("queue")))
                .keyFrom(dev.idem.rabbitmq.KeyExtractor.header("payment-id"))
                .handler((key, message) -> handle(inbox, key, new String(message.getBody(), StandardCharsets.UTF_8)))
                .concurrency(2)
                .build()
                .start();
    }
}
