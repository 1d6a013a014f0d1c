/** The outbox's benchmark: write overhead, relay throughput against a hand-written relay, commit-to-published latency. */
@NullMarked
package dev.idem.bench.outbox;

import org.jspecify.annotations.NullMarked;
