package dev.idem.outbox;

import dev.idem.outbox.spi.OutboxPublisher;
import dev.idem.outbox.spi.OutboxRecord;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;

/**
 * A publisher that stands in for the broker at the SPI boundary (the database under test is real): it keeps every
 * record it acknowledged, in order, answers each record with what {@code answer} says, and records a violation when
 * a key's record is published while another of the same key is still unacknowledged.
 */
final class RecordingPublisher implements OutboxPublisher {
    /** What the publisher does with a record. */
    enum Answer {
        ACK,
        /** The broker refuses it (counts towards parking). */
        REFUSE,
        /** The broker does not answer in time (retried, never parked). */
        TIMEOUT,
        /** The broker acknowledges it and the relay's process dies before it can mark it sent. */
        ACK_THEN_CRASH
    }

    /** What stands for a kill -9 after the broker's ack: an Error, which nothing in the relay catches. */
    static final class Crash extends Error {
        private static final long serialVersionUID = 1L;

        Crash() {
            super("the relay process died after the broker's acknowledgement");
        }
    }

    record Published(String relay, OutboxRecord record) {}

    private final List<Published> published = new CopyOnWriteArrayList<>();
    private final Set<String> inFlight = ConcurrentHashMap.newKeySet();
    private final List<String> violations = new CopyOnWriteArrayList<>();
    private final String relay;
    private final RecordingPublisher shared;
    private volatile Function<OutboxRecord, Answer> answer = r -> Answer.ACK;

    RecordingPublisher() {
        this.relay = "";
        this.shared = this;
    }

    private RecordingPublisher(String relay, RecordingPublisher shared) {
        this.relay = relay;
        this.shared = shared;
    }

    /** A view that records into this publisher under {@code relay}'s name. */
    RecordingPublisher as(String relay) {
        return new RecordingPublisher(relay, this);
    }

    void answer(Function<OutboxRecord, Answer> answer) {
        shared.answer = answer;
    }

    @Override
    public CompletableFuture<Void> publish(OutboxRecord record) {
        RecordingPublisher s = shared;
        if (!s.inFlight.add(record.key())) {
            s.violations.add("key " + record.key() + " published by " + relay + " while another of its messages was"
                    + " unacknowledged: " + record);
        }
        Answer answer = s.answer.apply(record);
        CompletableFuture<Void> ack = CompletableFuture.supplyAsync(() -> {
            try {
                return switch (answer) {
                    case ACK, ACK_THEN_CRASH -> {
                        s.published.add(new Published(relay, record));
                        yield null;
                    }
                    case REFUSE ->
                        throw new dev.idem.outbox.spi.PublishRefusedException(
                                "message too large for the test broker", null);
                    case TIMEOUT -> throw new IllegalStateException("the test broker did not answer");
                };
            } finally {
                s.inFlight.remove(record.key());
            }
        });
        if (answer == Answer.ACK_THEN_CRASH) {
            ack.join();
            throw new Crash();
        }
        return ack.thenApply(v -> null);
    }

    List<Published> published() {
        return new ArrayList<>(shared.published);
    }

    List<String> ids() {
        return published().stream().map(p -> p.record().messageId()).toList();
    }

    List<String> violations() {
        return List.copyOf(shared.violations);
    }

    /** The published positions per key, in publication order. */
    Map<String, List<Long>> positionsByKey() {
        Map<String, List<Long>> byKey = new java.util.LinkedHashMap<>();
        for (Published p : published()) {
            byKey.computeIfAbsent(p.record().key(), k -> new ArrayList<>())
                    .add(p.record().position());
        }
        return byKey;
    }
}
