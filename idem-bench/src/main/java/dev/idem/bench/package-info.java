/**
 * JMH micro-benchmarks of Idem's in-JVM parts. Build and run all of them:
 *
 * <pre>{@code
 * ./mvnw -q -pl idem-bench -am package -DskipTests && java -jar idem-bench/target/benchmarks.jar -f 1 -wi 2 -i 3 -w 1s -r 1s
 * }</pre>
 *
 * Figures and the machine they were measured on: {@code docs/benchmarks.md}.
 */
@NullMarked
package dev.idem.bench;

import org.jspecify.annotations.NullMarked;
