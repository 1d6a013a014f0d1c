package dev.idem.demo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Outcome;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongConsumer;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/** How a strategy's run treats its consumer's life on a broker of the test's own. */
class StrategyRunTest {
    private static final String NAME_SERVER_TIMEOUT = "wait response on the channel <127.0.0.1:9876> timeout, 1887(ms)";

    @Test
    void aRestartAfterACrash_thatTheBrokerRefusesOnce_isTriedAgain_andTheRunFinishes() throws Exception {
        AtomicInteger subscribes = new AtomicInteger();
        LabBroker broker = new ScriptedBroker(() -> switch (subscribes.incrementAndGet()) {
            case 1 -> new FakeSubscription(new StrategyRun.InjectedCrash(), false);
            case 2 -> throw new IllegalStateException(NAME_SERVER_TIMEOUT);
            default -> new FakeSubscription(null, true);
        });

        StrategyRun run = runUntil(broker, 30);

        assertThat(run.failure()).isEmpty();
        assertThat(run.finished()).isTrue();
        assertThat(run.crashes.get()).isEqualTo(1);
        assertThat(subscribes.get()).isEqualTo(3);
    }

    @Test
    void aRestartTheBrokerKeepsRefusing_endsTheRunAtTheDeadline_withTheBrokersError() throws Exception {
        AtomicInteger subscribes = new AtomicInteger();
        LabBroker broker = new ScriptedBroker(() -> {
            if (subscribes.incrementAndGet() == 1) {
                return new FakeSubscription(new StrategyRun.InjectedCrash(), false);
            }
            throw new IllegalStateException("name server down");
        });

        StrategyRun run = runUntil(broker, 2);

        assertThat(run.finished()).isFalse();
        assertThat(run.failure()).get().extracting(Throwable::getMessage).isEqualTo("name server down");
    }

    @Test
    void aFirstStartTheBrokerRefusesOnce_isTriedAgain_andTheRunFinishes() throws Exception {
        AtomicInteger subscribes = new AtomicInteger();
        LabBroker broker = new ScriptedBroker(() -> {
            if (subscribes.incrementAndGet() == 1) {
                throw new IllegalStateException(NAME_SERVER_TIMEOUT);
            }
            return new FakeSubscription(null, true);
        });

        StrategyRun run = runUntil(broker, 30);

        assertThat(run.failure()).isEmpty();
        assertThat(run.finished()).isTrue();
        assertThat(subscribes.get()).isEqualTo(2);
    }

    /** A strategy's run on {@code broker}, to its end or for at most {@code seconds}. */
    private static StrategyRun runUntil(LabBroker broker, int seconds) {
        ExecutorService second = Executors.newSingleThreadExecutor();
        try {
            StrategyRun run = new StrategyRun(
                    new NoStrategy(), broker, new ConsumerFaults(LabOptions.Faults.defaults(), 42, broker), second);
            run.run(System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds));
            return run;
        } finally {
            second.shutdownNow();
        }
    }

    @FunctionalInterface
    private interface Subscribe {
        LabBroker.Subscription next() throws Exception;
    }

    private record ScriptedBroker(Subscribe subscribe) implements LabBroker {
        @Override
        public String id() {
            return "scripted";
        }

        @Override
        public void prepare(List<Strategy> strategies) {}

        @Override
        public List<LabResult.Entry> environment() {
            return List.of();
        }

        @Override
        public FlowProducer.Published publish(OrderFlow flow, LabOptions.Faults faults, LongConsumer progress) {
            throw new UnsupportedOperationException();
        }

        @Override
        public long storedCopies() {
            return 0;
        }

        @Override
        public Optional<String> unavailable(ConsumerFaults.Fault fault) {
            return Optional.empty();
        }

        @Override
        public String label(ConsumerFaults.Fault fault) {
            return fault.name();
        }

        @Override
        public Subscription subscribe(Strategy strategy, Handler handler) throws Exception {
            return subscribe.next();
        }

        @Override
        public long deadLetters(Strategy strategy) {
            return 0;
        }

        @Override
        public void close() {}
    }

    /** A consumer that has crashed (a failure given) or has consumed everything. */
    private record FakeSubscription(@Nullable Throwable crashed, boolean finished) implements LabBroker.Subscription {
        @Override
        public boolean isRunning() {
            return crashed == null;
        }

        @Override
        public Optional<Throwable> failure() {
            return Optional.ofNullable(crashed);
        }

        @Override
        public long settled() {
            return 0;
        }

        @Override
        public void close() {}
    }

    private static final class NoStrategy implements Strategy {
        @Override
        public String id() {
            return "none";
        }

        @Override
        public String description() {
            return "nothing";
        }

        @Override
        public boolean guarded() {
            return false;
        }

        @Override
        public Outcome handle(Delivery delivery) {
            throw new UnsupportedOperationException();
        }
    }
}
