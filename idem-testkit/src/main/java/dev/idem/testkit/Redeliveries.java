package dev.idem.testkit;

import dev.idem.ConfigurationException;
import dev.idem.Outcome;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * Delivers messages to your guarded handler the way a real broker does on a bad day, so a test can check that
 * every effect still happens exactly once: duplicates after the ack, a copy delivered concurrently with the
 * original, redelivery after a lost ack (the consumer "crashed" after the handler and before acking), reordering,
 * and redelivery of everything the handler asked to retry.
 *
 * <pre>{@code
 * Redeliveries.Report report = Redeliveries.of(keys)
 *         .duplicates(0.2).concurrent(0.1).lostAcks(0.05).reordering(0.3).threads(4).seed(42)
 *         .deliverTo(key -> guard.run(key, () -> charge(key)));
 * assertThat(report.unfinished()).isEmpty();
 * // then count the effects in your own tables: one per key
 * }</pre>
 *
 * A delivery whose outcome says {@code RETRY} is delivered again (up to {@link #maxAttempts(int)} times); {@code
 * DEAD_LETTER} ends the message. Rates are fractions of messages in [0, 1]. Not thread-safe while configuring; one
 * {@link #deliverTo} run at a time.
 */
public final class Redeliveries {
    private final List<String> keys;
    private double duplicates;
    private double concurrent;
    private double lostAcks;
    private double reordering;
    private int threads = 4;
    private int maxAttempts = 1000;
    private long seed = 1;

    private Redeliveries(List<String> keys) {
        this.keys = List.copyOf(keys);
    }

    /** The messages to deliver, by idempotency key; each is one logical message. */
    public static Redeliveries of(List<String> keys) {
        return new Redeliveries(keys);
    }

    /** Fraction of messages delivered once more after they were acked (a producer retry). */
    public Redeliveries duplicates(double rate) {
        this.duplicates = rate("duplicates", rate);
        return this;
    }

    /** Fraction of messages of which a second copy is delivered at the same moment on another thread. */
    public Redeliveries concurrent(double rate) {
        this.concurrent = rate("concurrent", rate);
        return this;
    }

    /** Fraction of messages whose first ack is lost, so they are delivered again after being handled. */
    public Redeliveries lostAcks(double rate) {
        this.lostAcks = rate("lostAcks", rate);
        return this;
    }

    /** Fraction of adjacent message pairs swapped before delivery. */
    public Redeliveries reordering(double rate) {
        this.reordering = rate("reordering", rate);
        return this;
    }

    /** Consumer threads. Default 4. */
    public Redeliveries threads(int threads) {
        if (threads < 1) {
            throw new ConfigurationException("threads must be at least 1, got " + threads);
        }
        this.threads = threads;
        return this;
    }

    /** Deliveries of one message after which a retried message counts as unfinished. Default 1000. */
    public Redeliveries maxAttempts(int maxAttempts) {
        if (maxAttempts < 1) {
            throw new ConfigurationException("maxAttempts must be at least 1, got " + maxAttempts);
        }
        this.maxAttempts = maxAttempts;
        return this;
    }

    /** Seed of the random choices, for a reproducible run. Default 1. */
    public Redeliveries seed(long seed) {
        this.seed = seed;
        return this;
    }

    private static double rate(String name, double rate) {
        if (!(rate >= 0 && rate <= 1)) {
            throw new ConfigurationException(name + " must be a fraction in [0, 1], got " + rate);
        }
        return rate;
    }

    /**
     * Delivers every message to {@code handler} (called concurrently from {@link #threads(int)} threads) until each
     * is acked or dead-lettered, with the configured faults, and reports what happened.
     */
    public Report deliverTo(Function<String, Outcome> handler) throws InterruptedException {
        Objects.requireNonNull(handler, "handler");
        Random random = new Random(seed);
        List<Delivery> plan = new ArrayList<>();
        for (String key : keys) {
            plan.add(new Delivery(key, random.nextDouble() < lostAcks, random.nextDouble() < concurrent));
        }
        for (int i = 0; i + 1 < plan.size(); i++) {
            if (random.nextDouble() < reordering) {
                Collections.swap(plan, i, i + 1);
            }
        }
        Set<String> duplicated = ConcurrentHashMap.newKeySet();
        for (String key : keys) {
            if (random.nextDouble() < duplicates) {
                duplicated.add(key);
            }
        }
        LinkedBlockingDeque<Delivery> queue = new LinkedBlockingDeque<>(plan);
        Map<String, AtomicInteger> attempts = new ConcurrentHashMap<>();
        Map<Outcome.Type, AtomicInteger> counts = Collections.synchronizedMap(new EnumMap<>(Outcome.Type.class));
        Set<String> finished = ConcurrentHashMap.newKeySet();
        Set<String> deadLettered = ConcurrentHashMap.newKeySet();
        AtomicInteger pending = new AtomicInteger(plan.size());
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        ExecutorService copies = Executors.newCachedThreadPool();
        try {
            List<Future<?>> workers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                workers.add(pool.submit(() -> {
                    while (pending.get() > 0) {
                        Delivery d = queue.poll(10, TimeUnit.MILLISECONDS);
                        if (d == null) {
                            continue;
                        }
                        Outcome outcome =
                                d.concurrent ? deliverTwiceAtOnce(copies, handler, d.key) : handler.apply(d.key);
                        counts.computeIfAbsent(outcome.type(), k -> new AtomicInteger())
                                .incrementAndGet();
                        int attempt = attempts.computeIfAbsent(d.key, k -> new AtomicInteger())
                                .incrementAndGet();
                        switch (outcome.action()) {
                            case ACK -> {
                                if (d.loseAck) {
                                    queue.addLast(new Delivery(d.key, false, false));
                                } else if (duplicated.remove(d.key)) {
                                    queue.addLast(new Delivery(d.key, false, false));
                                } else {
                                    finished.add(d.key);
                                    pending.decrementAndGet();
                                }
                            }
                            case RETRY -> {
                                if (attempt < maxAttempts) {
                                    queue.addLast(new Delivery(d.key, d.loseAck, false));
                                } else {
                                    pending.decrementAndGet();
                                }
                            }
                            case DEAD_LETTER -> {
                                deadLettered.add(d.key);
                                pending.decrementAndGet();
                            }
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> w : workers) {
                w.get();
            }
        } catch (java.util.concurrent.ExecutionException e) {
            throw new IllegalStateException("the handler threw instead of returning an Outcome", e.getCause());
        } finally {
            pool.shutdownNow();
            copies.shutdownNow();
        }
        List<String> unfinished = new ArrayList<>();
        for (String key : keys) {
            if (!finished.contains(key) && !deadLettered.contains(key)) {
                unfinished.add(key);
            }
        }
        Map<Outcome.Type, Integer> byType = new EnumMap<>(Outcome.Type.class);
        counts.forEach((type, n) -> byType.put(type, n.get()));
        int deliveries = byType.values().stream().mapToInt(Integer::intValue).sum();
        return new Report(deliveries, Collections.unmodifiableMap(byType), List.copyOf(deadLettered), unfinished);
    }

    /** Hands the same message to two threads at the same moment; answers the outcome of this thread's copy. */
    private static Outcome deliverTwiceAtOnce(ExecutorService pool, Function<String, Outcome> handler, String key)
            throws Exception {
        CountDownLatch start = new CountDownLatch(1);
        Future<Outcome> other = pool.submit(() -> {
            start.await();
            return handler.apply(key);
        });
        start.countDown();
        Outcome mine = handler.apply(key);
        other.get();
        return mine;
    }

    private record Delivery(String key, boolean loseAck, boolean concurrent) {}

    /**
     * What a run did.
     *
     * @param deliveries handler calls, concurrent copies included once
     * @param outcomes how many deliveries ended in each outcome (concurrent second copies not counted)
     * @param deadLettered keys whose message was dead-lettered
     * @param unfinished keys neither acked nor dead-lettered within {@link #maxAttempts(int)}: lost messages
     */
    public record Report(
            int deliveries, Map<Outcome.Type, Integer> outcomes, List<String> deadLettered, List<String> unfinished) {}
}
