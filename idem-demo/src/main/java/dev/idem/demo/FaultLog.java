package dev.idem.demo;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/** Every fault the lab injected and every consumer exit, with its time: the report's timeline. Thread-safe. */
final class FaultLog {

    /** One line of the timeline. */
    record Event(Instant at, double secondsIntoRun, String kind, String detail) {}

    private final long startNanos = System.nanoTime();
    private final Instant start = Instant.now();
    private final List<Event> events = new ArrayList<>();

    synchronized void add(String kind, String detail) {
        long elapsed = System.nanoTime() - startNanos;
        events.add(new Event(start.plus(Duration.ofNanos(elapsed)), elapsed / 1e9, kind, detail));
    }

    synchronized List<Event> events() {
        return List.copyOf(events);
    }

    synchronized long count(String kind) {
        return events.stream().filter(e -> e.kind().equals(kind)).count();
    }

    double secondsIntoRun() {
        return (System.nanoTime() - startNanos) / 1e9;
    }
}
