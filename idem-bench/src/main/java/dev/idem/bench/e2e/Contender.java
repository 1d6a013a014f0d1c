package dev.idem.bench.e2e;

import dev.idem.Outcome;
import dev.idem.bench.e2e.Workload.Delivery;
import java.time.Duration;
import java.util.List;
import org.jspecify.annotations.Nullable;

/** One way of consuming the workload: no guard, a hand-written dedup, an Idem guard, or a tool users pick today. */
interface Contender {
    /** Short id for {@code --contenders}, e.g. {@code idem-inbox}. */
    String id();

    /** What the report calls it. */
    String label();

    /** Messages handed to one {@link Session#deliver} call. */
    default int batchSize() {
        return 1;
    }

    /** Hands more than one message to a {@link Session#deliver} call. */
    default boolean batched() {
        return batchSize() > 1;
    }

    default boolean needsRedis() {
        return false;
    }

    /** The table its ledger rows land in ({@code ledger_unique} has a unique key on the payment). */
    default String ledgerTable() {
        return "ledger";
    }

    /** Opens the contender for one run (outside the timed part). */
    Session open(Env env) throws Exception;

    /** What a run gives a contender. {@code redisUri} is null when Redis is not part of the run. */
    record Env(Bank bank, @Nullable String redisUri, String runId, Duration lease) {}

    /** One run of a contender. Called from many threads at once. */
    interface Session extends AutoCloseable {
        /**
         * Handles the batch and answers per delivery, in order. Throws {@link Faults.Crash} when the consumer died:
         * nothing of the batch was acked.
         */
        List<Answer> deliver(List<Delivery> batch) throws Exception;

        @Override
        default void close() throws Exception {}
    }

    /** What the consumer tells the broker about one delivery. */
    record Answer(Kind kind, long retryMillis) {
        enum Kind {
            ACK,
            RETRY,
            DEAD_LETTER
        }

        static final Answer ACK = new Answer(Kind.ACK, 0);
        static final Answer RETRY = new Answer(Kind.RETRY, 0);

        static Answer of(Outcome outcome) {
            return switch (outcome.action()) {
                case ACK -> ACK;
                case RETRY ->
                    new Answer(
                            Kind.RETRY,
                            outcome.retryAfter().map(Duration::toMillis).orElse(0L));
                case DEAD_LETTER -> new Answer(Kind.DEAD_LETTER, 0);
            };
        }
    }
}
