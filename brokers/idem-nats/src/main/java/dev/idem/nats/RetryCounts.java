package dev.idem.nats;

import dev.idem.spi.Attempts;
import io.nats.client.Message;
import io.nats.client.impl.NatsJetStreamMetaData;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The {@link Attempts} of the messages this consumer asked the server to deliver again. A nak carries nothing, and the
 * server's delivery count also counts waits and deliveries lost to a crash, which the retry bound must not; so the
 * counts stay here, by the message's place in its stream, until the message is settled. Bounded: past {@value
 * #CAPACITY} messages the oldest are forgotten. A message this consumer does not know (forgotten, retried by another
 * instance, or delivered again after a restart) starts from {@link Attempts#NONE}: its handler may be retried more
 * often than the bound, never less. Thread-safe.
 */
final class RetryCounts {
    private static final int CAPACITY = 100_000;

    private final Map<String, Attempts> byMessage = new LinkedHashMap<>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Attempts> eldest) {
            return size() > CAPACITY;
        }
    };

    synchronized Attempts of(Message message) {
        return byMessage.getOrDefault(identity(message.metaData()), Attempts.NONE);
    }

    synchronized void retried(Message message, Attempts attempts) {
        String id = identity(message.metaData());
        byMessage.remove(id);
        byMessage.put(id, attempts);
    }

    synchronized void settled(Message message) {
        byMessage.remove(identity(message.metaData()));
    }

    /**
     * The message's stream, consumer, stream sequence and the time the stream stored it: a stream deleted and created
     * again reuses the sequences, not the store times.
     */
    static String identity(NatsJetStreamMetaData meta) {
        Instant stored = meta.timestamp().toInstant();
        return meta.getStream() + ":" + meta.getConsumer() + ":" + meta.streamSequence() + ":" + stored.getEpochSecond()
                + "." + String.format("%09d", stored.getNano());
    }
}
