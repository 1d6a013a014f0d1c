package dev.idem.bench;

import dev.idem.IdempotencyKey;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;

/**
 * {@link IdempotencyKey#storedKey()}: a short business key is stored as it is (a UTF-8 length check), a key over 128
 * UTF-8 bytes is stored as {@code sha256:} + hex (a SHA-256 of 300 bytes). Nanoseconds per call.
 *
 * <pre>{@code
 * ./mvnw -q -pl idem-bench -am package -DskipTests
 * java -jar idem-bench/target/benchmarks.jar IdempotencyKeyBenchmark -f 1 -wi 2 -i 3 -w 1s -r 1s
 * }</pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class IdempotencyKeyBenchmark {
    private final IdempotencyKey shortKey = IdempotencyKey.of("payments", "10086:PAY");
    private final IdempotencyKey longKey = IdempotencyKey.of("payments", "order-10086:".repeat(25));

    @Benchmark
    public String storedKeyShort() {
        return shortKey.storedKey();
    }

    @Benchmark
    public String storedKeyLongHashed() {
        return longKey.storedKey();
    }
}
