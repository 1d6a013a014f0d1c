package dev.idem.demo;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.idem.rabbitmq.RabbitTopology;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * A consumer lab over RabbitMQ: a quorum work queue with Idem's retry queue, dead-letter exchange and queue ({@link
 * RabbitTopology}), which the consumer processes share. Every copy is published with a new {@code message-id};
 * copies next to each other go to two consumers at the same moment. The broker does not say over AMQP how many
 * deliveries are unacked: the drain is no message ready (work and retry queue) and the effect count unchanged for
 * the settle time.
 */
final class RabbitConsumerLabBroker implements ConsumerLabBroker {
    private final String url;
    private final Connection connection;
    private final Channel publisher;
    private final RabbitTopology topology;
    private boolean created;

    RabbitConsumerLabBroker(String url, String suffix) {
        this.url = url;
        try {
            ConnectionFactory factory = new ConnectionFactory();
            factory.setUri(url);
            factory.setConnectionTimeout(3000);
            this.connection = RabbitConnect.open(factory, "idem-consumer-lab");
            this.publisher = connection.createChannel();
            publisher.confirmSelect();
        } catch (Exception e) {
            throw new LabOptions.BadOptionException("RabbitMQ does not answer at " + LabDatabase.redact(url) + " ("
                    + LabDatabase.rootMessage(e) + "): start it or fix --rabbitmq-url");
        }
        this.topology = RabbitTopology.forQueue("idem-lab-payments-" + suffix);
    }

    @Override
    public String id() {
        return "rabbitmq";
    }

    @Override
    public void prepare() throws Exception {
        try (Channel channel = connection.createChannel()) {
            topology.declare(channel);
            created = true;
        }
    }

    @Override
    public Map<String, String> placeholders() {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("amqpUrl", url);
        p.put("brokerUrl", url);
        p.put("queue", topology.workQueue());
        p.put("topic", topology.workQueue());
        p.put("group", topology.workQueue());
        p.put("retryQueue", topology.retryQueue());
        p.put("deadLetterQueue", topology.deadLetterQueue());
        return p;
    }

    @Override
    public List<LabResult.Entry> environment() {
        List<LabResult.Entry> env = new ArrayList<>();
        env.add(new LabResult.Entry("rabbitmq", LabDatabase.redact(url)));
        env.add(new LabResult.Entry("queue", topology.toString()));
        return env;
    }

    @Override
    public boolean consumersReady(int processes) throws Exception {
        try (Channel channel = connection.createChannel()) {
            return channel.queueDeclarePassive(topology.workQueue()).getConsumerCount() >= processes;
        }
    }

    @Override
    public void send(PaymentWorkload.Send send) throws Exception {
        AMQP.BasicProperties props = new AMQP.BasicProperties.Builder()
                .messageId(UUID.randomUUID().toString())
                .headers(Map.of(PAYMENT_ID_HEADER, send.payment().id()))
                .deliveryMode(2)
                .build();
        publisher.basicPublish(
                "", topology.workQueue(), props, send.payment().value().getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public void flush() throws Exception {
        publisher.waitForConfirmsOrDie(30_000);
    }

    @Override
    public long backlog() throws Exception {
        try (Channel channel = connection.createChannel()) {
            return channel.queueDeclarePassive(topology.workQueue()).getMessageCount()
                    + channel.queueDeclarePassive(topology.retryQueue()).getMessageCount();
        }
    }

    @Override
    public void close() {
        try {
            if (created) {
                try (Channel channel = connection.createChannel()) {
                    channel.queueDelete(topology.workQueue());
                    channel.queueDelete(topology.retryQueue());
                    channel.queueDelete(topology.deadLetterQueue());
                    channel.exchangeDelete(topology.deadLetterExchange());
                }
            }
        } catch (Exception e) {
            org.slf4j.LoggerFactory.getLogger(RabbitConsumerLabBroker.class).warn("cannot delete the lab's queues", e);
        } finally {
            connection.abort();
        }
    }
}
