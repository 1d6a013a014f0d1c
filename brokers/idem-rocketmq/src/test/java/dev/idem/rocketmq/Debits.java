package dev.idem.rocketmq;

import dev.idem.Delivery;
import dev.idem.Outcome;
import dev.idem.jdbc.JdbcInbox;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * The debit {@code account:amount} a message body asks for, applied by an unguarded listener or through the JDBC
 * inbox (the mark and the debit in one PostgreSQL transaction), so that each duplicate-cause proof runs both in the
 * same scenario.
 */
final class Debits {
    private final RocketMQFixture.Bank bank;
    /** The msgIds of the deliveries that reached the handler. */
    final List<String> deliveries = new CopyOnWriteArrayList<>();

    Debits(RocketMQFixture.Bank bank) {
        this.bank = bank;
    }

    /** A plain RocketMQ listener: every delivery debits. */
    MessageListenerConcurrently unguarded() {
        return (messages, context) -> {
            for (MessageExt message : messages) {
                deliveries.add(message.getMsgId());
                String[] debit = RocketMQFixture.body(message).split(":");
                try {
                    bank.debit(debit[0], Long.parseLong(debit[1]), message.getMsgId());
                } catch (Exception e) {
                    return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        };
    }

    /** The guarded listener: the inbox's mark and the debit commit together, keyed by {@code keys}. */
    MessageListenerConcurrently guarded(DefaultMQPushConsumer consumer, KeyExtractor keys) {
        JdbcInbox inbox = JdbcInbox.builder(bank.database().dataSource())
                .namespace(consumer.getConsumerGroup())
                .createTableIfMissing(true)
                .build();
        return RocketMQFixture.idem(consumer)
                .keyFrom(keys)
                .handler((key, message) -> {
                    deliveries.add(message.getMsgId());
                    String[] debit = RocketMQFixture.body(message).split(":");
                    return inbox.handle(Delivery.of(key), connection -> {
                        bank.debit(connection, debit[0], Long.parseLong(debit[1]), key);
                        return Outcome.processed();
                    });
                })
                .build()
                .concurrently();
    }
}
