package dev.idem.id;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A test clock that moves only when told to, or by a fixed step on every read: a generator that waits for its clock
 * (sequence used up, clock stepped back) then waits a known number of reads, and no test sleeps. (The testkit's
 * MutableClock cannot step on reads, and the core cannot depend on the testkit.)
 */
final class SteppingClock extends Clock {
    private final AtomicLong micros;
    private final AtomicLong reads = new AtomicLong();
    private volatile long stepMicros;

    private SteppingClock(Instant start) {
        this.micros = new AtomicLong(toMicros(start));
    }

    static SteppingClock at(String instant) {
        return new SteppingClock(Instant.parse(instant));
    }

    /** From now on every read moves the clock forward by {@code step} after answering. */
    SteppingClock stepEveryRead(Duration step) {
        this.stepMicros = step.toNanos() / 1000;
        return this;
    }

    void set(Instant instant) {
        micros.set(toMicros(instant));
    }

    void advance(Duration d) {
        micros.addAndGet(d.toNanos() / 1000);
    }

    long reads() {
        return reads.get();
    }

    @Override
    public Instant instant() {
        reads.incrementAndGet();
        long now = micros.getAndAdd(stepMicros);
        return Instant.ofEpochSecond(0, now * 1000);
    }

    @Override
    public ZoneId getZone() {
        return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
        throw new UnsupportedOperationException("always UTC");
    }

    private static long toMicros(Instant instant) {
        return instant.getEpochSecond() * 1_000_000 + instant.getNano() / 1000;
    }
}
