package dev.idem.rocketmq;

import dev.idem.Outcome;
import dev.idem.spi.Attempts;
import dev.idem.spi.Verdict;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
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
import org.apache.rocketmq.common.message.MessageDecoder;
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
            RedeliveryAttempts.WAITS);

    /** The broker refuses a message whose properties take more bytes than this. */
    private static final int MAX_PROPERTIES_BYTES = Short.MAX_VALUE;
    /** What the client and the broker add to a copy's properties on its way (cluster name, flags). */
    private static final int ADDED_ON_THE_WAY = 256;

    private static final int MAX_REASON_CHARS = 1000;

    private final DefaultMQPushConsumer consumer;
    private final Supplier<MQProducer> producer;

    Resends(DefaultMQPushConsumer consumer, Supplier<MQProducer> producer) {
        this.consumer = consumer;
        this.producer = producer;
    }

    /** Stores a copy of {@code message} in {@code %DLQ%<group>} with the dead-letter properties. */
    boolean deadLetter(MessageExt message, Verdict.DeadLetter verdict) {
        Message copy = copy(message, MixAll.getDLQTopic(consumer.getConsumerGroup()));
        MessageAccessor.putProperty(
                copy, IdempotentRocketMQ.DLQ_OUTCOME, verdict.outcome().type().name());
        MessageAccessor.putProperty(copy, IdempotentRocketMQ.DLQ_ATTEMPTS, Integer.toString(handlerAttempts(verdict)));
        MessageAccessor.putProperty(copy, IdempotentRocketMQ.DLQ_REASON, reasonThatFits(verdict.reason(), copy));
        return send(copy, message, "dead-letter queue");
    }

    /**
     * Stores a copy in {@code %RETRY%<group>} with {@code delayLevel}, the same reconsume count and the waits of {@code
     * attempts} ({@link RedeliveryAttempts}), so that a wait never brings the message nearer to an attempt bound.
     */
    boolean retryUncounted(MessageExt message, Attempts attempts, int delayLevel) {
        Message copy = copy(message, MixAll.getRetryTopic(consumer.getConsumerGroup()));
        MessageAccessor.setReconsumeTime(copy, Integer.toString(message.getReconsumeTimes()));
        MessageAccessor.putProperty(
                copy, RedeliveryAttempts.WAITS, RedeliveryAttempts.waitsValue(message.getReconsumeTimes(), attempts));
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

    /** The handler attempts made: those counted, and the one that rejected the message. */
    private static int handlerAttempts(Verdict.DeadLetter verdict) {
        int counted = verdict.attempts().failures();
        return verdict.outcome().type() == Outcome.Type.REJECTED ? counted + 1 : counted;
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

    /**
     * The reason as a property value of {@code copy}: without RocketMQ's separators (\u0001, \u0002), at most {@value
     * #MAX_REASON_CHARS} characters, and short enough that the copy's properties stay under the broker's limit, which
     * refuses the copy on every try otherwise.
     */
    private static String reasonThatFits(String reason, Message copy) {
        String clean = reason.replace('\u0001', ' ').replace('\u0002', ' ');
        if (clean.length() > MAX_REASON_CHARS) {
            clean = clean.substring(0, MAX_REASON_CHARS) + "...";
        }
        int used = MessageDecoder.messageProperties2String(copy.getProperties()).getBytes(StandardCharsets.UTF_8).length
                + IdempotentRocketMQ.DLQ_REASON.length()
                + 2;
        int room = MAX_PROPERTIES_BYTES - ADDED_ON_THE_WAY - used;
        byte[] bytes = clean.getBytes(StandardCharsets.UTF_8);
        if (bytes.length <= room) {
            return clean;
        }
        int cut = Math.max(0, room - 3);
        // Decoding a prefix drops a character cut in half.
        CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.IGNORE);
        try {
            return decoder.decode(ByteBuffer.wrap(bytes, 0, cut)) + (cut > 0 ? "..." : "");
        } catch (CharacterCodingException e) {
            throw new IllegalStateException("UTF-8 decoding that ignores malformed input failed", e);
        }
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
