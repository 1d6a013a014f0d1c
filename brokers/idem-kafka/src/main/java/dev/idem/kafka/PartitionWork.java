package dev.idem.kafka;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.TopicPartition;
import org.jspecify.annotations.Nullable;

/** One assigned partition: its progress and its lanes. Created on assignment, dropped on revocation. */
final class PartitionWork<K, V> {
    final TopicPartition tp;
    final PartitionProgress progress = new PartitionProgress();
    /** Set by the poll thread when the partition is revoked or lost: its tasks stop before their next record. */
    volatile boolean revoked;
    /** The set of lanes in a handler, when a handler timeout is set; else null (nothing to watch). */
    final @Nullable Set<Lane<K, V>> watched;
    /** Paused by the poll thread because too many of its records wait. Poll thread only. */
    boolean paused;

    private final @Nullable Lane<K, V> single;
    /** Per-key lanes ({@link Ordering#KEY}); poll thread only. */
    private final Map<String, Lane<K, V>> byKey = new HashMap<>();

    PartitionWork(TopicPartition tp, Ordering ordering, @Nullable Set<Lane<K, V>> watched) {
        this.tp = tp;
        this.watched = watched;
        this.single = ordering == Ordering.PARTITION ? new Lane<>(this, null) : null;
    }

    /** The lane of a record of {@code key} (ignored when the whole partition is one lane). Poll thread only. */
    Lane<K, V> lane(String key) {
        return single != null ? single : byKey.computeIfAbsent(key, k -> new Lane<>(this, k));
    }

    /** Forgets an idle, empty per-key lane. Poll thread only. */
    void forgetIfIdle(Lane<K, V> lane) {
        if (lane != single && lane.key != null && !lane.scheduled.get() && lane.mailbox.isEmpty()) {
            byKey.remove(lane.key, lane);
        }
    }
}
