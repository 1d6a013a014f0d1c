package dev.idem.demo;

import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A lab's Kafka sends, each one confirmed: a send the producer reports failed is sent again, as an application does,
 * until the broker acknowledges it. A send the lab lost silently would be counted against the consumers under test as
 * a message they lost (seen on a loaded machine: both copies of the first order sent to a new topic failed, and the
 * two-stage run waited for that order until its drain timeout).
 */
final class AcknowledgedSends<K, V> {
    /** How many times a send that keeps failing is sent again before the run fails. */
    static final int MAX_SENDS_AGAIN = 20;

    /**
     * Producer settings for the lab's sends: a batch the broker keeps refusing fails after 15 s (not the default
     * 120 s) and is sent again. The first batch an idempotent producer sends to a partition of a new topic can be
     * refused for good: {@code NOT_LEADER_OR_FOLLOWER} while the broker takes the lead, then, once the batches after
     * it are stored, {@code OUT_OF_ORDER_SEQUENCE_NUMBER} at every retry until the delivery timeout.
     */
    static final Map<String, Object> SETTINGS =
            Map.of(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 15_000, ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 5_000);

    private static final Logger LOG = LoggerFactory.getLogger(AcknowledgedSends.class);

    private final Producer<K, V> producer;
    private final ConcurrentLinkedQueue<ProducerRecord<K, V>> failed = new ConcurrentLinkedQueue<>();

    AcknowledgedSends(Producer<K, V> producer) {
        this.producer = Objects.requireNonNull(producer, "producer");
    }

    /**
     * Hands {@code record} to the producer; a failure is sent again by the next {@link #flush}, so behind the records
     * sent after it: where a key's order matters, {@link #sendUntilAcknowledged} each record instead.
     */
    void send(ProducerRecord<K, V> record) {
        producer.send(record, (metadata, e) -> {
            if (e != null) {
                LOG.warn("the producer reported a failed send to {}; it is sent again", record.topic(), e);
                failed.add(record);
            }
        });
    }

    /**
     * Waits until every record sent is acknowledged, sending each failed one again until it is.
     *
     * @return how many records were sent again (each perhaps one more copy in the topic)
     * @throws ExecutionException when a record failed {@value #MAX_SENDS_AGAIN} more times: the run proves nothing
     */
    int flush() throws ExecutionException, InterruptedException {
        producer.flush();
        int again = 0;
        for (ProducerRecord<K, V> record = failed.poll(); record != null; record = failed.poll()) {
            again += 1 + sendUntilAcknowledged(producer, record);
        }
        return again;
    }

    /**
     * Sends {@code record} and waits for its acknowledgement, sending it again after each failure or 30 s without an
     * answer; how many times it was sent again.
     */
    static <K, V> int sendUntilAcknowledged(Producer<K, V> producer, ProducerRecord<K, V> record)
            throws ExecutionException, InterruptedException {
        for (int again = 0; ; again++) {
            try {
                producer.send(record).get(30, TimeUnit.SECONDS);
                return again;
            } catch (ExecutionException | TimeoutException e) {
                if (again == MAX_SENDS_AGAIN) {
                    throw new ExecutionException(
                            "the broker did not acknowledge a record for " + record.topic() + " in " + (again + 1)
                                    + " sends (last: " + e + "): the run proves nothing",
                            e);
                }
                LOG.warn("a send to {} was not acknowledged ({}); it is sent again", record.topic(), e.toString());
            }
        }
    }
}
