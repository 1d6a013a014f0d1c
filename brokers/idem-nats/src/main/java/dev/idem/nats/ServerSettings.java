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
 * acks, whole messages, no delivery bound of the server's own, how often a running handler must say {@code
 * inProgress()}, and the bounds of one pull ({@code MaxRequestBatch}, {@code MaxRequestExpires}: the server refuses
 * every pull beyond them, so the consumer asks within them).
 */
final class ServerSettings {
    private final Duration ackWait;
    private final int maxPullBatch;
    private final @Nullable Duration maxPullWait;
    private final List<String> warnings;

    private ServerSettings(Duration ackWait, int maxPullBatch, @Nullable Duration maxPullWait, List<String> warnings) {
        this.ackWait = ackWait;
        this.maxPullBatch = maxPullBatch;
        this.maxPullWait = maxPullWait;
        this.warnings = List.copyOf(warnings);
    }

    /**
     * Checks the consumer {@code durable} of {@code stream} and the dead-letter subject for this adapter, at start.
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
        ServerSettings settings = checkConsumer(stream, durable, consumer, guardLease);
        String name = "consumer " + durable + " of stream " + stream;
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
        return settings;
    }

    /**
     * Checks the durable consumer's own configuration, which an operator may edit on a live consumer: the running
     * consumer checks it again every AckWait. (A dead-letter stream that is gone for a while is not checked then: its
     * messages wait and are retried, never terminated.)
     *
     * @throws ConfigurationException when the consumer cannot be run safely
     */
    static ServerSettings checkConsumer(
            String stream, String durable, ConsumerConfiguration consumer, @Nullable Duration guardLease) {
        String name = "consumer " + durable + " of stream " + stream;
        if (consumer.getAckPolicy() != AckPolicy.Explicit) {
            throw new ConfigurationException(
                    name + " has AckPolicy " + consumer.getAckPolicy().name()
                            + ": a guarded consumer acks each message itself; create it with AckPolicy.Explicit");
        }
        if (consumer.isHeadersOnly()) {
            throw new ConfigurationException(name + " is HeadersOnly: it delivers every message without its body, so"
                    + " handlers would act on empty data and dead letters would be stored empty; create it with"
                    + " headersOnly(false)");
        }
        if (consumer.getMaxDeliver() > 0) {
            throw new ConfigurationException(name + " has MaxDeliver " + consumer.getMaxDeliver() + ": the server"
                    + " counts every delivery, also one lost to a crash, a cut connection or an expired AckWait, and"
                    + " after the last one gives the message up silently, never handled and never dead-lettered;"
                    + " update it with maxDeliver(-1) and no backoff (the consumer's RetryPolicy bounds the retries"
                    + " and dead-letters with the reason)");
        }
        Duration ackWait = consumer.getAckWait() == null ? Duration.ofSeconds(30) : consumer.getAckWait();
        List<String> warnings = new ArrayList<>();
        if (guardLease != null && guardLease.compareTo(ackWait) < 0) {
            warnings.add("the guard's lease (" + guardLease + ") is shorter than the AckWait of " + name + " ("
                    + ackWait + "): when in-progress signals do not reach the server, the message is redelivered after"
                    + " AckWait, when the lease may already have expired, and a second handler would run next to the"
                    + " first; keep the guard's watchdog on and the lease at least the AckWait");
        }
        int maxPullBatch = consumer.getMaxBatch() > 0 ? (int) Math.min(Integer.MAX_VALUE, consumer.getMaxBatch()) : -1;
        Duration maxExpires = consumer.getMaxExpires();
        Duration maxPullWait = maxExpires == null || maxExpires.isZero() || maxExpires.isNegative() ? null : maxExpires;
        return new ServerSettings(ackWait, maxPullBatch, maxPullWait, warnings);
    }

    private static <T> List<T> orEmpty(@Nullable List<T> list) {
        return list == null ? List.of() : list;
    }

    Duration ackWait() {
        return ackWait;
    }

    /** The most messages one pull may ask for: {@code wanted}, within the consumer's {@code MaxRequestBatch}. */
    int pullBatch(int wanted) {
        return maxPullBatch > 0 ? Math.min(wanted, maxPullBatch) : wanted;
    }

    /** How long one pull may wait: {@code wanted}, within the consumer's {@code MaxRequestExpires}. */
    Duration pullWait(Duration wanted) {
        return maxPullWait != null && maxPullWait.compareTo(wanted) < 0 ? maxPullWait : wanted;
    }

    /** How often a running handler's message is marked in progress: a third of AckWait. */
    Duration progressEvery() {
        return Duration.ofMillis(Math.max(1, ackWait.toMillis() / 3));
    }

    List<String> warnings() {
        return warnings;
    }
}
