package dev.idem.spring.kafka;

import dev.idem.Outcome;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;

/**
 * The failure an error handler is deciding on the current consumer thread, and the dead-letter outcome the decision
 * reached on it: spring-kafka hands neither to the back-off nor the recoverer, which run on that thread while the
 * handler handles the failure.
 */
final class HandledFailure {
    private final ThreadLocal<Exception> exception = new ThreadLocal<>();
    private final ThreadLocal<Outcome> deadLetter = new ThreadLocal<>();
    private final ThreadLocal<ConsumerRecord<?, ?>> kept = new ThreadLocal<>();

    /** Runs {@code handling} with {@code thrown} as this thread's failure. */
    <T> T during(Exception thrown, Supplier<T> handling) {
        exception.set(thrown);
        try {
            return handling.get();
        } finally {
            exception.remove();
            deadLetter.remove();
            kept.remove();
        }
    }

    @Nullable
    Exception exception() {
        return exception.get();
    }

    void deadLettered(Outcome outcome) {
        deadLetter.set(outcome);
    }

    /** The recoverer refused {@code record}: it is kept, and delivered again. */
    void kept(ConsumerRecord<?, ?> record) {
        kept.set(record);
    }

    /** The record the recoverer refused while this thread's failure was handled, if any. */
    @Nullable
    ConsumerRecord<?, ?> kept() {
        return kept.get();
    }

    /** The outcome of the dead-letter verdict on this thread's failure, if the decision reached one. */
    @Nullable
    Outcome deadLetter() {
        return deadLetter.get();
    }
}
