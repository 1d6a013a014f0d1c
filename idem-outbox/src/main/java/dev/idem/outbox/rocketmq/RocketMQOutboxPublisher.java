package dev.idem.outbox.rocketmq;

import dev.idem.outbox.spi.OutboxPublisher;
import dev.idem.outbox.spi.OutboxRecord;
import dev.idem.outbox.spi.PublishRefusedException;
import dev.idem.rocketmq.RocketMQProducers;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.MQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.client.producer.selector.SelectMessageQueueByHash;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.remoting.exception.RemotingException;
import org.apache.rocketmq.remoting.protocol.ResponseCode;
import org.jspecify.annotations.Nullable;

/**
 * Publishes outbox records to RocketMQ: topic = the record's destination, the message id in the user property {@value
 * RocketMQProducers#KEY_PROPERTY} (stamped with {@link RocketMQProducers#withKey}; read it with {@code
 * KeyExtractor.property(RocketMQProducers.KEY_PROPERTY)}), the record's headers as user properties, body = its
 * payload. One key stays on one queue, in order: the queue is chosen by the hash of the record's key ({@link
 * SelectMessageQueueByHash}), so a change of the topic's queue count moves keys to other queues once.
 *
 * <p>Sends synchronously and counts only {@link SendStatus#SEND_OK} as published. A message the client or the broker
 * finds illegal (too large, a reserved or blank property), a topic or group without write permission and a property
 * holding RocketMQ's separator are refusals; any other failure (a timeout, a lost connection, a busy broker, a topic
 * without a route yet) and a send status other than {@code SEND_OK} are retried by the relay without counting.
 *
 * <p>Use a producer with {@link RocketMQProducers#applyRecommendedSettings} (it refuses properties that hold the
 * separator), its {@code sendMsgTimeout} below the relay's {@code publishTimeout}: each send blocks its wave for up to
 * that long. A broker that answers {@code SLAVE_NOT_AVAILABLE} on every send (a sync master without its slave) is
 * retried with backoff and never parks, each attempt storing one more copy under the same id. Thread-safe. Does not
 * own the producer.
 */
public final class RocketMQOutboxPublisher implements OutboxPublisher {
    /** Codes the broker (or the client's own check) answers for a message it would refuse again. */
    private static final Set<Integer> REFUSALS = Set.of(ResponseCode.MESSAGE_ILLEGAL, ResponseCode.NO_PERMISSION);

    private static final MessageQueueSelector BY_KEY = new SelectMessageQueueByHash();

    private final MQProducer producer;

    private RocketMQOutboxPublisher(MQProducer producer) {
        this.producer = producer;
    }

    /** A publisher on your started producer; not shut down by it. */
    public static RocketMQOutboxPublisher of(MQProducer producer) {
        return new RocketMQOutboxPublisher(Objects.requireNonNull(producer, "producer"));
    }

    @Override
    public CompletableFuture<Void> publish(OutboxRecord record) {
        Message message;
        try {
            message = message(record);
        } catch (RuntimeException e) {
            // putUserProperty refuses a blank value and the names RocketMQ keeps for itself (KEYS, TAGS, ...), withKey
            // an id holding the separator: the same record would be refused on every attempt.
            return CompletableFuture.failedFuture(refused(record, e.getMessage(), e));
        }
        try {
            SendResult result = producer.send(message, BY_KEY, record.key());
            if (result.getSendStatus() == SendStatus.SEND_OK) {
                return CompletableFuture.completedFuture(null);
            }
            // FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE: the master stored the message but did not
            // flush it to disk (SYNC_FLUSH) or copy it to a slave (SYNC_MASTER) in time, so a crash of the master may
            // still lose it. Not the durable acceptance the relay marks "sent" on: retried, and the copy already
            // stored reaches the consumer with the same key, which its guard drops.
            return CompletableFuture.failedFuture(new IllegalStateException("RocketMQ answered "
                    + result.getSendStatus() + " for " + record.messageId() + " on " + record.destination()
                    + ": stored, not yet durable"));
        } catch (MQClientException e) {
            return CompletableFuture.failedFuture(
                    REFUSALS.contains(e.getResponseCode()) ? refused(record, e.getErrorMessage(), e) : e);
        } catch (MQBrokerException e) {
            return CompletableFuture.failedFuture(
                    REFUSALS.contains(e.getResponseCode()) ? refused(record, e.getErrorMessage(), e) : e);
        } catch (RemotingException e) {
            return CompletableFuture.failedFuture(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return CompletableFuture.failedFuture(e);
        }
    }

    private static Message message(OutboxRecord record) {
        Message message = new Message(record.destination(), record.payload());
        record.headers().forEach(message::putUserProperty);
        return RocketMQProducers.withKey(message, record.messageId());
    }

    private static PublishRefusedException refused(OutboxRecord record, @Nullable String reason, Throwable cause) {
        return new PublishRefusedException(
                "RocketMQ refused " + record.messageId() + " for topic " + record.destination() + ": " + reason, cause);
    }
}
