package dev.idem.demo.samples;

import io.nats.client.Connection;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.Nats;
import io.nats.client.PullSubscribeOptions;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * The plain receive loop of the unguarded samples: a batch of payments, then their acknowledgement (the Kafka offsets
 * committed, or each JetStream message acked). When each sample acknowledges is what makes it wrong.
 */
interface PaymentSource {

    /** The next payments (an empty list when none came in a short wait). */
    List<Payment> next() throws Exception;

    /** Acknowledges everything {@link #next()} returned last. */
    void acknowledge() throws Exception;

    static PaymentSource of(SampleArgs args) throws Exception {
        return of(args, 1);
    }

    /**
     * The same source, with batches of up to {@code batch} messages on NATS (a fetch) and RabbitMQ (the deliveries of
     * a prefetch of that many); Kafka polls up to 20 records whatever it is given.
     */
    static PaymentSource of(SampleArgs args, int batch) throws Exception {
        return switch (args.broker()) {
            case "nats" -> new Jet(args, batch);
            case "rabbitmq" -> new Rabbit(args, batch);
            default -> new Kafka(args);
        };
    }

    /** A Kafka consumer of the group, offsets committed by hand; short sessions so a killed copy is noticed soon. */
    final class Kafka implements PaymentSource {
        private final KafkaConsumer<String, String> consumer;
        private final Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();

        Kafka(SampleArgs args) {
            Map<String, Object> props = new HashMap<>();
            props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args.get("server"));
            props.put(ConsumerConfig.GROUP_ID_CONFIG, args.get("group"));
            props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
            props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 20);
            props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 6000);
            props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 1000);
            consumer = new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer());
            consumer.subscribe(List.of(args.get("topic")));
        }

        @Override
        public List<Payment> next() {
            offsets.clear();
            List<Payment> payments = new ArrayList<>();
            for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                Header id = r.headers().lastHeader("payment-id");
                payments.add(Payment.of(new String(id.value(), StandardCharsets.UTF_8), r.value()));
                offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
            }
            return payments;
        }

        @Override
        public void acknowledge() {
            if (!offsets.isEmpty()) {
                consumer.commitSync(offsets);
            }
        }
    }

    /**
     * A pull subscription bound to the lab's durable consumer, one message per fetch unless told otherwise: copies next
     * to each other in the stream go to two consumers at once.
     */
    final class Jet implements PaymentSource {
        private final JetStreamSubscription subscription;
        private final int fetch;
        private final List<Message> batch = new ArrayList<>();

        Jet(SampleArgs args, int fetch) throws Exception {
            this.fetch = fetch;
            Connection connection = Nats.connect(args.get("server"));
            subscription = connection
                    .jetStream()
                    .subscribe(null, PullSubscribeOptions.bind(args.get("stream"), args.get("group")));
        }

        @Override
        public List<Payment> next() {
            batch.clear();
            batch.addAll(subscription.fetch(fetch, Duration.ofMillis(500)));
            List<Payment> payments = new ArrayList<>();
            for (Message m : batch) {
                payments.add(Payment.of(
                        m.getHeaders().getFirst("payment-id"), new String(m.getData(), StandardCharsets.UTF_8)));
            }
            return payments;
        }

        @Override
        public void acknowledge() throws Exception {
            for (Message m : batch) {
                m.ackSync(Duration.ofSeconds(5));
            }
        }
    }

    /**
     * A consumer of the shared queue with a prefetch of one unless told otherwise: the broker hands the next message to
     * another consumer while this one works, so copies next to each other go to two consumers at once.
     */
    final class Rabbit implements PaymentSource {
        private final com.rabbitmq.client.Channel channel;
        private final int batch;
        private final java.util.concurrent.BlockingQueue<com.rabbitmq.client.Delivery> received =
                new java.util.concurrent.LinkedBlockingQueue<>();
        private long lastTag = -1;

        Rabbit(SampleArgs args, int batch) throws Exception {
            this.batch = batch;
            com.rabbitmq.client.ConnectionFactory factory = new com.rabbitmq.client.ConnectionFactory();
            factory.setUri(args.get("server"));
            channel = factory.newConnection().createChannel();
            channel.basicQos(batch);
            channel.basicConsume(args.get("queue"), false, (tag, delivery) -> received.add(delivery), tag -> {});
        }

        @Override
        public List<Payment> next() throws Exception {
            lastTag = -1;
            com.rabbitmq.client.Delivery first = received.poll(200, java.util.concurrent.TimeUnit.MILLISECONDS);
            if (first == null) {
                return List.of();
            }
            List<com.rabbitmq.client.Delivery> deliveries = new ArrayList<>(List.of(first));
            received.drainTo(deliveries, batch - 1);
            List<Payment> payments = new ArrayList<>();
            for (com.rabbitmq.client.Delivery d : deliveries) {
                lastTag = d.getEnvelope().getDeliveryTag();
                Object id = d.getProperties().getHeaders().get("payment-id");
                payments.add(Payment.of(id.toString(), new String(d.getBody(), StandardCharsets.UTF_8)));
            }
            return payments;
        }

        @Override
        public void acknowledge() throws Exception {
            if (lastTag >= 0) {
                channel.basicAck(lastTag, true);
            }
        }
    }
}
