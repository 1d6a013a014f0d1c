package dev.idem.rocketmq;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.MQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * The three ways a message leaves a listener unacknowledged-but-settled: a copy with the reason in {@code %DLQ%<group>},
 * a copy in {@code %RETRY%<group>} that keeps its reconsume count (a key in progress), and RocketMQ's own counted
 * send-back. Each returns whether the broker stored the message; a failure is logged and left to the caller.
 */
final class Resends {
    private static final System.Logger LOG = System.getLogger(Resends.class.getName());
    /** Properties that describe one delivery, not the message: a copy must not carry them. */
    private static final List<String> DELIVERY_PROPERTIES = List.of(
            MessageConst.PROPERTY_CONSUME_START_TIMESTAMP,
            MessageConst.PROPERTY_MIN_OFFSET,
            MessageConst.PROPERTY_MAX_OFFSET,
            MessageConst.PROPERTY_TRANSACTION_PREPARED,
            MessageConst.PROPERTY_DELAY_TIME_LEVEL,
            MessageConst.PROPERTY_REAL_TOPIC,
            MessageConst.PROPERTY_REAL_QUEUE_ID,
            MessageConst.PROPERTY_RECONSUME_TIME,
            MessageConst.PROPERTY_MAX_RECONSUME_TIMES,
            IdempotentRocketMQ.HANDLER_ATTEMPTS);

    private final DefaultMQPushConsumer consumer;
    private final Supplier<MQProducer> producer;

    Resends(DefaultMQPushConsumer consumer, Supplier<MQProducer> producer) {
        this.consumer = consumer;
        this.producer = producer;
    }

    /** Stores a copy of {@code message} in {@code %DLQ%<group>} with the dead-letter properties. */
    boolean deadLetter(MessageExt message, Decision decision) {
        Message copy = copy(message, MixAll.getDLQTopic(consumer.getConsumerGroup()));
        MessageAccessor.putProperty(
                copy,
                IdempotentRocketMQ.DLQ_REASON,
                propertyValue(decision.outcome().reason()));
        MessageAccessor.putProperty(
                copy, IdempotentRocketMQ.DLQ_OUTCOME, decision.outcome().type().name());
        MessageAccessor.putProperty(copy, IdempotentRocketMQ.DLQ_ATTEMPTS, Integer.toString(decision.attempt()));
        return send(copy, message, "dead-letter queue");
    }

    /**
     * Stores a copy in {@code %RETRY%<group>} with {@code delayLevel} and the same reconsume count, so that a key in
     * progress elsewhere never brings the message nearer to an attempt bound.
     */
    boolean retryUncounted(MessageExt message, int delayLevel) {
        Message copy = copy(message, MixAll.getRetryTopic(consumer.getConsumerGroup()));
        MessageAccessor.setReconsumeTime(copy, Integer.toString(message.getReconsumeTimes()));
        MessageAccessor.setMaxReconsumeTimes(copy, Integer.toString(consumer.getMaxReconsumeTimes()));
        copy.setDelayTimeLevel(delayLevel);
        return send(copy, message, "retry topic");
    }

    /**
     * RocketMQ's own send-back (the broker copies the stored message, counts a reconsume; level -1 means {@code
     * %DLQ%<group>}).
     */
    @SuppressWarnings("deprecation") // the only public send-back; RocketMQ's listeners use the same one
    boolean sendBack(MessageExt message, int delayLevel) {
        try {
            consumer.sendMessageBack(message, delayLevel, message.getBrokerName());
            return true;
        } catch (Exception e) {
            warn(message, "send-back (level " + delayLevel + ")", e);
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            return false;
        }
    }

    private boolean send(Message copy, MessageExt original, String where) {
        try {
            SendResult result = producer.get().send(copy);
            if (result.getSendStatus() == SendStatus.SEND_OK
                    || result.getSendStatus() == SendStatus.FLUSH_DISK_TIMEOUT
                    || result.getSendStatus() == SendStatus.FLUSH_SLAVE_TIMEOUT
                    || result.getSendStatus() == SendStatus.SLAVE_NOT_AVAILABLE) {
                return true; // stored on the master; a lost slave copy is the broker's durability, not ours
            }
            warn(original, where, new IllegalStateException("send status " + result.getSendStatus()));
            return false;
        } catch (Exception e) {
            warn(original, where, e);
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            return false;
        }
    }

    private static Message copy(MessageExt message, String topic) {
        Message copy = new Message(topic, message.getBody());
        copy.setFlag(message.getFlag());
        Map<String, String> properties = new HashMap<>(message.getProperties());
        DELIVERY_PROPERTIES.forEach(properties::remove);
        MessageAccessor.setProperties(copy, properties);
        MessageAccessor.putProperty(copy, MessageConst.PROPERTY_RETRY_TOPIC, message.getTopic());
        String origin = MessageAccessor.getOriginMessageId(message);
        MessageAccessor.setOriginMessageId(copy, UtilAll.isBlank(origin) ? message.getMsgId() : origin);
        return copy;
    }

    /** RocketMQ separates properties with \u0001 and \u0002: a value must not hold them. */
    private static String propertyValue(String text) {
        String clean = text.replace('\u0001', ' ').replace('\u0002', ' ');
        return clean.length() <= 1000 ? clean : clean.substring(0, 1000) + "...";
    }

    private void warn(MessageExt message, String where, Exception e) {
        LOG.log(
                System.Logger.Level.WARNING,
                "{0}: {1}-{2}@{3} could not be written to the {4}: {5}",
                consumer.getConsumerGroup(),
                message.getTopic(),
                message.getQueueId(),
                message.getQueueOffset(),
                where,
                e.toString());
    }
}
