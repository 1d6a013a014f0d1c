package dev.idem.testkit;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;

/** A clock that stands still until a test moves it. Thread-safe. */
public final class MutableClock extends Clock {
    private volatile Instant now;

    private MutableClock(Instant start) {
        this.now = start;
    }

    public static MutableClock at(Instant start) {
        return new MutableClock(start);
    }

    /** A clock at the current wall time (truncated to milliseconds), standing still. */
    public static MutableClock atNow() {
        return new MutableClock(Instant.ofEpochMilli(System.currentTimeMillis()));
    }

    public synchronized void advance(Duration d) {
        now = now.plus(d);
    }

    public synchronized void set(Instant instant) {
        now = instant;
    }

    @Override
    public Instant instant() {
        return now;
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
