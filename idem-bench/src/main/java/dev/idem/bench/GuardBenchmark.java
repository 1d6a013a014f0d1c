package dev.idem.bench;

import dev.idem.Guard;
import dev.idem.InMemoryStore;
import dev.idem.Outcome;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * The guard's own cost with the {@link InMemoryStore}, one thread, nanoseconds per message:
 *
 * <ul>
 *   <li>{@code newMessage}: a new key each call: claim, run a no-op handler, complete (with and without the lease
 *       watchdog, which schedules a renewal for every running handler). The key is built from a counter ({@code
 *       "order-" + n}), which is part of the figure. Lease and retention are 50 ms so that the store's sweep keeps
 *       the map small, as a real retention window and a real message rate would.
 *   <li>{@code duplicate}: a key already completed: the claim answers {@code DUPLICATE} and the handler does not run.
 * </ul>
 *
 * <pre>{@code
 * ./mvnw -q -pl idem-bench -am package -DskipTests
 * java -jar idem-bench/target/benchmarks.jar GuardBenchmark -f 1 -wi 2 -i 3 -w 1s -r 1s
 * }</pre>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class GuardBenchmark {

    /** A guard that sees a new key on every call. */
    @State(Scope.Thread)
    public static class NewKeys {
        @Param({"true", "false"})
        public boolean watchdog;

        Guard guard;
        long counter;

        @Setup(Level.Trial)
        public void setUp() {
            guard = Guard.builder(InMemoryStore.create())
                    .namespace("bench")
                    .lease(Duration.ofMillis(50))
                    .retention(Duration.ofMillis(50))
                    .watchdog(watchdog)
                    .build();
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            guard.close();
        }
    }

    /** A guard whose one key is already done. */
    @State(Scope.Thread)
    public static class DoneKey {
        Guard guard;

        @Setup(Level.Trial)
        public void setUp() {
            guard = Guard.builder(InMemoryStore.create()).namespace("bench").build();
            Outcome first = guard.run("order-1:PAY", () -> {});
            if (first.type() != Outcome.Type.PROCESSED) {
                throw new IllegalStateException("setup expected PROCESSED, got " + first);
            }
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            guard.close();
        }
    }

    @Benchmark
    public Outcome newMessage(NewKeys state) {
        return state.guard.run("order-" + state.counter++, () -> {});
    }

    @Benchmark
    public Outcome duplicate(DoneKey state) {
        return state.guard.run("order-1:PAY", () -> {});
    }
}
