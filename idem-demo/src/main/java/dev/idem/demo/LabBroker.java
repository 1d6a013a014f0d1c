package dev.idem.demo;

import dev.idem.Outcome;
import dev.idem.demo.ConsumerFaults.Fault;
import java.util.List;
import java.util.Optional;
import java.util.function.LongConsumer;

/**
 * The broker a lab run goes over: how the flow is published (with the broker's own producer-side duplicates), how one
 * strategy's consumer receives, acks and gets redeliveries through the broker's Idem adapter, and which consumer-side
 * faults the broker can produce for real. Everything else (the flow, the strategies, the SQL verdict) is shared.
 */
interface LabBroker extends AutoCloseable {

    /** {@code kafka}, {@code rocketmq}, {@code rabbitmq}, {@code nats}. */
    String id();

    /** Creates what one run needs (topic, queues, streams; unique names), for these strategies. */
    void prepare(List<Strategy> strategies) throws Exception;

    /** What the run uses, for the report ({@code label → value}). */
    List<LabResult.Entry> environment();

    /** Publishes the flow and makes the producer-side duplicates happen; then the copies are in the broker. */
    FlowProducer.Published publish(OrderFlow flow, LabOptions.Faults faults, LongConsumer progress) throws Exception;

    /** The copies the broker holds for each strategy, read from the broker after publishing. */
    long storedCopies() throws Exception;

    /** Why {@code fault} cannot happen on this broker, or empty when it can. */
    Optional<String> unavailable(Fault fault);

    /** What {@code fault} is on this broker, for the injected table. */
    String label(Fault fault);

    /**
     * True where the broker's own redelivery of a message still being handled takes seconds (a rebalance): the lab
     * then hands the second copy to a second consumer thread; false where {@link Subscription#cutOff()} makes the
     * broker redeliver for real.
     */
    default boolean overlapsInProcess() {
        return false;
    }

    /** Starts a consumer of the whole flow for {@code strategy}, through the broker's Idem adapter. */
    Subscription subscribe(Strategy strategy, Handler handler) throws Exception;

    /** Messages in {@code strategy}'s dead-letter topic, queue or stream. */
    long deadLetters(Strategy strategy) throws Exception;

    /** Deletes what {@link #prepare} created (for an external broker) and stops an in-process one. */
    @Override
    void close();

    /** A random suffix that makes a run's topic, queue and stream names unique. */
    static String runSuffix() {
        return Long.toString(java.util.concurrent.ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE, 36);
    }

    /** The lab's handler of one delivery: the message key and its payload. */
    @FunctionalInterface
    interface Handler {
        Outcome handle(String key, byte[] payload);
    }

    /** One strategy's running consumer. */
    interface Subscription extends AutoCloseable {
        /** False once it stopped on its own (an injected crash, a failure). */
        boolean isRunning();

        Optional<Throwable> failure();

        /** It stopped because the lab made it stop (a crash, a cut connection): a new consumer takes over. */
        default boolean stoppedByInjection() {
            return failure().orElse(null) instanceof StrategyRun.InjectedCrash;
        }

        /** Copies handled to the end (acked) so far: progress. */
        long settled();

        /** Every copy the broker holds for this strategy was handled and acknowledged. */
        boolean finished();

        /**
         * Cuts this consumer off the broker while a handler is inside its effect, so that the broker redelivers what
         * it has not seen acked to the next consumer; for {@link Fault#TIMEOUT} where that redelivery is real.
         */
        default void cutOff() {}

        @Override
        void close();
    }
}
