package dev.idem.demo;

import dev.idem.kafka.KafkaProducers;
import dev.idem.testkit.TcpProxy;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.jspecify.annotations.Nullable;

/**
 * Publishes the order flow and makes the producer-side duplicates happen for real, so that two copies are
 * physically in the topic:
 *
 * <ul>
 *   <li><b>lost ack, client retry</b>: with a {@link TcpProxy} in front of the broker, a burst of records is sent
 *       while the proxy swallows the broker's responses; the records are written, the client times out, reconnects
 *       and sends the batch again (the producer has {@code enable.idempotence=false}, as many still do).
 *   <li><b>application resend</b>: an idempotent producer's send times out while the proxy swallows every answer;
 *       the application sends the same record again, which the broker's idempotence cannot recognise.
 * </ul>
 *
 * Without a proxy (an external broker) both become application resends of the same record.
 */
final class FlowProducer {

    /**
     * What was published.
     *
     * @param retryLabel what {@code clientRetryCopies} are on this broker, for the injected table
     * @param resendLabel what {@code appResendCopies} are
     */
    record Published(
            long logical,
            long clientRetryCopies,
            long appResendCopies,
            long episodes,
            String mechanism,
            String retryLabel,
            String resendLabel) {}

    private final String bootstrap;
    private final @Nullable TcpProxy proxy;
    private final String topic;

    FlowProducer(String bootstrap, @Nullable TcpProxy proxy, String topic) {
        this.bootstrap = bootstrap;
        this.proxy = proxy;
        this.topic = topic;
    }

    Published publish(OrderFlow flow, LabOptions.Faults faults, LongConsumer progress) throws Exception {
        FlowPublishing.Copies copies;
        try (KafkaProducer<byte[], byte[]> plain = producer(false, false);
                KafkaProducer<byte[], byte[]> idempotent = producer(true, true)) {
            AtomicReference<Exception> error = new AtomicReference<>();
            copies = FlowPublishing.publish(flow.sends(), faults, progress, new FlowPublishing.Sender() {
                @Override
                public void send(OrderFlow.Send s) {
                    FlowProducer.this.send(plain, s, error);
                }

                @Override
                public void flush() throws Exception {
                    plain.flush();
                    check(error);
                }

                @Override
                public long lostAckBurst(List<OrderFlow.Send> chunk) throws Exception {
                    return FlowProducer.this.lostAckBurst(plain, chunk, error);
                }

                @Override
                public long resendBurst(List<OrderFlow.Send> chunk) throws Exception {
                    return FlowProducer.this.resendBurst(idempotent, chunk);
                }
            });
        }
        String mechanism = proxy != null
                ? "TCP proxy swallowing the broker's produce responses (client retry with enable.idempotence=false;"
                        + " application resend after a send timeout)"
                : "application resends of the same record (no proxy in front of an external broker)";
        return new Published(
                flow.sends().size(),
                copies.clientRetries(),
                copies.appResends(),
                copies.bursts(),
                mechanism,
                "producer retry after a lost ack",
                "application resend after a timeout");
    }

    /** Sends {@code chunk} while the broker's answers are lost: the client retries and the broker keeps both. */
    private long lostAckBurst(
            KafkaProducer<byte[], byte[]> producer, List<OrderFlow.Send> chunk, AtomicReference<Exception> error)
            throws Exception {
        if (proxy == null) {
            return resendTwice(producer, chunk, error);
        }
        proxy.blackholeExisting();
        for (OrderFlow.Send s : chunk) {
            send(producer, s, error);
        }
        producer.flush();
        check(error);
        return chunk.size();
    }

    /** Sends {@code chunk}, the sends time out, the application sends the same records again. */
    private long resendBurst(KafkaProducer<byte[], byte[]> producer, List<OrderFlow.Send> chunk) throws Exception {
        if (proxy == null) {
            return resendTwice(producer, chunk, new AtomicReference<>());
        }
        // The first record goes through normally: the connection must be up, so that the others reach the broker
        // and only their acknowledgements are lost.
        long resent = sendUntilAcknowledged(producer, chunk.get(0));
        proxy.blackholeAll(true);
        List<Future<RecordMetadata>> first = new ArrayList<>();
        try {
            for (OrderFlow.Send s : chunk.subList(1, chunk.size())) {
                first.add(producer.send(record(s)));
            }
            producer.flush();
        } finally {
            proxy.blackholeAll(false);
        }
        for (int k = 1; k < chunk.size(); k++) {
            try {
                first.get(k - 1).get(30, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                if (!timedOut(e)) {
                    throw e;
                }
                resent += 1 + sendUntilAcknowledged(producer, chunk.get(k));
            }
        }
        return resent;
    }

    /** Sends {@code s} until the broker acknowledges it; how many times it was sent again. */
    private long sendUntilAcknowledged(KafkaProducer<byte[], byte[]> producer, OrderFlow.Send s) throws Exception {
        return AcknowledgedSends.sendUntilAcknowledged(producer, record(s));
    }

    private static boolean timedOut(ExecutionException e) {
        return e.getCause() instanceof org.apache.kafka.common.errors.TimeoutException;
    }

    private long resendTwice(
            KafkaProducer<byte[], byte[]> producer, List<OrderFlow.Send> chunk, AtomicReference<Exception> error)
            throws Exception {
        for (OrderFlow.Send s : chunk) {
            send(producer, s, error);
            send(producer, s, error);
        }
        producer.flush();
        check(error);
        return chunk.size();
    }

    private void send(KafkaProducer<byte[], byte[]> producer, OrderFlow.Send s, AtomicReference<Exception> error) {
        producer.send(record(s), (metadata, e) -> {
            if (e != null) {
                error.compareAndSet(null, e);
            }
        });
    }

    private ProducerRecord<byte[], byte[]> record(OrderFlow.Send s) {
        OrderEvent e = s.event();
        ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(
                topic, s.partition(), Long.toString(e.orderId()).getBytes(StandardCharsets.UTF_8), e.encode());
        return KafkaProducers.withKey(r, e.key());
    }

    private static void check(AtomicReference<Exception> error) throws Exception {
        Exception e = error.get();
        if (e != null) {
            throw new IllegalStateException("publishing the order flow failed: " + e.getMessage(), e);
        }
    }

    private KafkaProducer<byte[], byte[]> producer(boolean idempotent, boolean shortTimeouts) {
        Map<String, Object> p = new HashMap<>();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, idempotent);
        p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 1);
        p.put(ProducerConfig.RETRIES_CONFIG, 10);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 20);
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, 256 * 1024);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 700);
        p.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, 50);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, shortTimeouts ? 1200 : 60_000);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, idempotent ? "idem-lab-resender" : "idem-lab-producer");
        return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }
}
