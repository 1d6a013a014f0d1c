package dev.idem.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import org.junit.jupiter.api.Test;

/**
 * The JMH jar runs the benchmarks its annotation processor listed at compile time: without the list, {@code java -jar
 * idem-bench/target/benchmarks.jar} (docs/benchmarks.md) finds none and fails.
 */
class BenchmarkListTest {

    @Test
    void theCompiledBenchmarks_areListedForTheJmhRunner() throws IOException {
        try (InputStream list = getClass().getResourceAsStream("/META-INF/BenchmarkList")) {
            assertThat(list)
                    .as("META-INF/BenchmarkList: JMH's annotation processor must run when idem-bench compiles")
                    .isNotNull();
            String benchmarks = new String(Objects.requireNonNull(list).readAllBytes(), StandardCharsets.UTF_8);
            assertThat(benchmarks)
                    .contains("dev.idem.bench.GuardBenchmark")
                    .contains("dev.idem.bench.MessageIdBenchmark")
                    .contains("dev.idem.bench.IdempotencyKeyBenchmark");
        }
    }
}
