package dev.idem.testkit;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Where a contract's message goes among a destination's partitions or queues, as the {@link AdapterContract}'s
 * scenarios expect: every message of one {@link TestMessage#route() route} to the same one (routes take them in
 * turn), a message without a route to each in turn. Thread-safe.
 */
public final class Routing {
    private final int slots;
    private final Map<String, Integer> slotOfRoute = new ConcurrentHashMap<>();
    private final AtomicInteger unrouted = new AtomicInteger();

    /** Routing over {@code slots} partitions or queues. */
    public Routing(int slots) {
        if (slots < 1) {
            throw new IllegalArgumentException("slots must be at least 1, was " + slots);
        }
        this.slots = slots;
    }

    /** The partition or queue, from 0 to {@code slots - 1}, that {@code message} goes to. */
    public int slotOf(TestMessage message) {
        String route = message.route();
        return route == null ? next() : slotOfRoute.computeIfAbsent(route, r -> slotOfRoute.size() % slots);
    }

    /** The partition or queue for a message without a route (a replayed dead letter): each in turn. */
    public int next() {
        return Math.floorMod(unrouted.getAndIncrement(), slots);
    }
}
