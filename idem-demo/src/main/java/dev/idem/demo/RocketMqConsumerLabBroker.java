package dev.idem.demo;

import dev.idem.rocketmq.RocketMQProducers;
import dev.idem.testsupport.EmbeddedRocketMQ;
import dev.idem.testsupport.RocketMQSend;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.remoting.exception.RemotingException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A consumer lab over RocketMQ: the in-process name server and broker of {@link EmbeddedRocketMQ} (delay levels of
 * seconds), a topic of 4 queues ({@code --partitions}), one push-consumer group with its {@code %RETRY%} and {@code
 * %DLQ%} topics. Each message carries the payment id in {@code KEYS} and in the {@code payment-id} property, a new
 * msgId for every copy; a {@link PaymentWorkload.Copy#CROSS} copy goes to the queue half the topic away, which
 * another consumer of the group holds (averaging allocation), so that two consumers take the same payment at once.
 */
final class RocketMqConsumerLabBroker implements ConsumerLabBroker {
    private static final Logger LOG = LoggerFactory.getLogger(RocketMqConsumerLabBroker.class);
    private static final long RESEND_PAUSE_MILLIS = 200;

    private final EmbeddedRocketMQ embedded;
    private final int queues;
    private final String topic;
    private final String group;
    private final DefaultMQProducer producer;

    RocketMqConsumerLabBroker(int queues, String suffix) throws Exception {
        this.embedded = EmbeddedRocketMQ.start(Files.createTempDirectory("idem-lab-rocketmq"));
        this.queues = queues;
        this.topic = "idem-lab-payments-" + suffix;
        this.group = "idem-lab-group-" + suffix;
        this.producer =
                RocketMQProducers.applyRecommendedSettings(new DefaultMQProducer("idem-lab-producer-" + suffix));
        producer.setNamesrvAddr(embedded.nameServer());
    }

    @Override
    public String id() {
        return "rocketmq";
    }

    @Override
    public void prepare() throws Exception {
        embedded.createTopic(topic, queues);
        embedded.createGroupTopics(group);
        producer.start();
    }

    @Override
    public Map<String, String> placeholders() {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("namesrv", embedded.nameServer());
        p.put("brokerUrl", embedded.nameServer());
        p.put("topic", topic);
        p.put("group", group);
        return p;
    }

    @Override
    public List<LabResult.Entry> environment() {
        List<LabResult.Entry> env = new ArrayList<>();
        env.add(new LabResult.Entry("rocketmq", "in-process name server and broker at " + embedded.nameServer()));
        env.add(new LabResult.Entry("topic", topic + " (" + queues + " queues), group " + group));
        return env;
    }

    /**
     * Always: messages sent before a consumer joins wait in the topic, and a new group reads from the first offset
     * (the embedded broker does not tell its group members).
     */
    @Override
    public boolean consumersReady(int processes) {
        return true;
    }

    @Override
    public void send(PaymentWorkload.Send send) throws Exception {
        PaymentWorkload.Payment p = send.payment();
        Message m = new Message(topic, p.value().getBytes(StandardCharsets.UTF_8));
        m.setKeys(p.id());
        m.putUserProperty(PAYMENT_ID_HEADER, p.id());
        int home = Math.floorMod(p.id().hashCode(), queues);
        int queue = send.copy() == PaymentWorkload.Copy.CROSS ? (home + queues / 2) % queues : home;
        sendUntilStored(() -> producer.send(m, (mqs, msg, arg) -> mqs.get((Integer) arg % mqs.size()), queue));
    }

    /**
     * Sends until the broker answers {@code SEND_OK}, again after each failure (a send to a selected queue is not
     * retried by the client), as an application does: a send the lab lost would be judged as a payment the consumers
     * under test lost (seen in CI: one {@code RemotingSendRequestException} failed the whole run; so did one name-server
     * timeout while the client fetched the topic's route, which the client throws as an {@code IllegalStateException}).
     *
     * @throws Exception the last failure, after {@value AcknowledgedSends#MAX_SENDS_AGAIN} more sends
     */
    static SendResult sendUntilStored(Callable<SendResult> send) throws Exception {
        for (int again = 0; ; again++) {
            Exception failure;
            try {
                SendResult result = send.call();
                if (result.getSendStatus() == SendStatus.SEND_OK) {
                    return result;
                }
                failure = new IllegalStateException("send not stored: " + result);
            } catch (RemotingException | MQBrokerException | MQClientException e) {
                failure = e;
            } catch (IllegalStateException e) {
                if (!RocketMQSend.isRouteLookupFailure(e)) {
                    throw e;
                }
                failure = e;
            }
            if (again == AcknowledgedSends.MAX_SENDS_AGAIN) {
                throw failure;
            }
            LOG.warn("a send to the lab's topic failed ({}); it is sent again", failure.toString());
            Thread.sleep(RESEND_PAUSE_MILLIS);
        }
    }

    @Override
    public void flush() {
        // every send above waited for the broker's answer
    }

    /** Messages past the group's committed offset, on the topic's queues and on the group's retry topic. */
    @Override
    public long backlog() throws Exception {
        long backlog = 0;
        for (String t : List.of(topic, "%RETRY%" + group)) {
            for (int q = 0; q < (t.equals(topic) ? queues : 1); q++) {
                long committed = Math.max(0, embedded.committedOffset(group, t, q));
                backlog += Math.max(0, embedded.endOffset(t, q) - committed);
            }
        }
        return backlog;
    }

    @Override
    public void close() {
        producer.shutdown();
        embedded.close();
    }
}
