package dev.idem.testkit;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.concurrent.atomic.AtomicReference;

/** A clock that stands still until a test moves it. Thread-safe. */
public final class MutableClock extends Clock {
    private final AtomicReference<Instant> now;

    private MutableClock(Instant start) {
        this.now = new AtomicReference<>(start);
    }

    public static MutableClock at(Instant start) {
        return new MutableClock(start);
    }

    /** A clock at the current wall time (truncated to milliseconds), standing still. */
    public static MutableClock atNow() {
        return new MutableClock(Instant.ofEpochMilli(System.currentTimeMillis()));
    }

    public void advance(Duration d) {
        now.updateAndGet(t -> t.plus(d));
    }

    public void set(Instant instant) {
        now.set(instant);
    }

    @Override
    public Instant instant() {
        return now.get();
    }

    @Override
    public ZoneId getZone() {
        return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
        throw new UnsupportedOperationException("MutableClock is always UTC");
    }
}
