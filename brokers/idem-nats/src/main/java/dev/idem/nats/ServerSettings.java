package dev.idem.nats;

import dev.idem.ConfigurationException;
import io.nats.client.api.AckPolicy;
import io.nats.client.api.ConsumerConfiguration;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * What the consumer takes from the durable consumer's configuration on the server, checked once at start: explicit
 * acks, how often a running handler must say {@code inProgress()}, and the delivery bound the server enforces.
 */
final class ServerSettings {
    private final Duration ackWait;
    private final long maxDeliver;
    private final Duration progressEvery;
    private final List<String> warnings;

    private ServerSettings(Duration ackWait, long maxDeliver, Duration progressEvery, List<String> warnings) {
        this.ackWait = ackWait;
        this.maxDeliver = maxDeliver;
        this.progressEvery = progressEvery;
        this.warnings = List.copyOf(warnings);
    }

    /**
     * Checks the consumer {@code durable} of {@code stream} for this adapter.
     *
     * @param streamSubjects the subjects the source stream captures
     * @param deadLetterStreams the streams that capture {@code deadLetterSubject}
     * @param guardLease the lease of the guard the handler runs, when the builder was told it
     * @throws ConfigurationException when the consumer cannot be run safely
     */
    static ServerSettings check(
            String stream,
            String durable,
            ConsumerConfiguration consumer,
            List<String> streamSubjects,
            String deadLetterSubject,
            List<String> deadLetterStreams,
            @Nullable Duration guardLease) {
        String name = "consumer " + durable + " of stream " + stream;
        if (consumer.getAckPolicy() != AckPolicy.Explicit) {
            throw new ConfigurationException(
                    name + " has AckPolicy " + consumer.getAckPolicy().name()
                            + ": a guarded consumer acks each message itself; create it with AckPolicy.Explicit");
        }
        if (deadLetterStreams.isEmpty()) {
            throw new ConfigurationException("no stream captures the dead-letter subject " + deadLetterSubject
                    + ": dead letters would be lost; add a stream for it (e.g. StreamConfiguration.builder().name(\"DLQ\")"
                    + ".subjects(\"" + deadLetterSubject + "\"))");
        }
        List<String> filters = orEmpty(consumer.getFilterSubjects());
        if (streamSubjects.stream().anyMatch(s -> Subjects.matches(s, deadLetterSubject))
                && (filters.isEmpty() || filters.stream().anyMatch(f -> Subjects.matches(f, deadLetterSubject)))) {
            throw new ConfigurationException("the dead-letter subject " + deadLetterSubject + " is captured by stream "
                    + stream + " and delivered to " + name + ": dead letters would come back to the handler; use a"
                    + " subject outside the stream or the consumer's filter");
        }
        Duration ackWait = consumer.getAckWait() == null ? Duration.ofSeconds(30) : consumer.getAckWait();
        Duration shortest = ackWait;
        for (Duration step : orEmpty(consumer.getBackoff())) {
            if (step.compareTo(shortest) < 0) {
                shortest = step;
            }
        }
        Duration progressEvery = Duration.ofMillis(Math.max(1, shortest.toMillis() / 3));
        List<String> warnings = new ArrayList<>();
        long maxDeliver = consumer.getMaxDeliver() > 0 ? consumer.getMaxDeliver() : -1;
        if (maxDeliver > 0) {
            warnings.add(name + " has MaxDeliver " + maxDeliver + ": the server gives a message up after that many"
                    + " deliveries, so a message whose key is still in progress elsewhere at its last delivery is held by"
                    + " its worker until the key is free (not nak'd), and a message that fails is dead-lettered at its"
                    + " last delivery at the latest; deliveries lost to a crash count too. MaxDeliver -1 (unlimited)"
                    + " leaves the bound to the RetryPolicy");
        }
        if (guardLease != null && guardLease.compareTo(ackWait) < 0) {
            warnings.add("the guard's lease (" + guardLease + ") is shorter than the AckWait of " + name + " ("
                    + ackWait + "): when in-progress signals do not reach the server, the message is redelivered after"
                    + " AckWait, when the lease may already have expired, and a second handler would run next to the"
                    + " first; keep the guard's watchdog on and the lease at least the AckWait");
        }
        return new ServerSettings(ackWait, maxDeliver, progressEvery, warnings);
    }

    private static <T> List<T> orEmpty(@Nullable List<T> list) {
        return list == null ? List.of() : list;
    }

    Duration ackWait() {
        return ackWait;
    }

    /** The server's delivery bound, or -1 when unlimited. */
    long maxDeliver() {
        return maxDeliver;
    }

    /** True when the server will not deliver this message again after {@code attempt}. */
    boolean lastDelivery(int attempt) {
        return maxDeliver > 0 && attempt >= maxDeliver;
    }

    /** How often a running handler's message is marked in progress: a third of the shortest redelivery wait. */
    Duration progressEvery() {
        return progressEvery;
    }

    List<String> warnings() {
        return warnings;
    }
}
