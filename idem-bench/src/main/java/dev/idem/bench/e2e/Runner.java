package dev.idem.bench.e2e;

import dev.idem.bench.e2e.Contender.Answer;
import dev.idem.bench.e2e.Workload.Delivery;
import dev.idem.testsupport.CountingSocketFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;

/**
 * A broker for one run: delivers the workload at least once to {@code threads} consumer threads, in batches of the
 * contender's size, and redelivers every message that was not acked (a retry answer, after its delay; a crash or an
 * exception, at once) until every message is acked. A racing copy is handed to a second pool of as many threads just
 * before its original is handled. The clock runs from the first delivery to the last ack.
 */
final class Runner {
    /** A delivery retried this often is given up (and so reported lost by the check). */
    private static final int MAX_ATTEMPTS = 200;

    private Runner() {}

    /** How a run went, as the broker saw it. */
    record Result(
            long nanos,
            int messages,
            long attempts,
            int crashes,
            int retries,
            int deadLettered,
            int gaveUp,
            int errors,
            @Nullable String firstError,
            boolean finished,
            double tripsPerNew,
            double tripsPerDuplicate) {
        double perSecond() {
            return messages / (nanos / 1e9);
        }
    }

    static Result run(
            Contender.Session session, Workload workload, int threads, int batchSize, Faults faults, Duration timeout)
            throws InterruptedException {
        var run = new State(session, faults, batchSize, workload.messageCount());
        run.ready.addAll(workload.deliveries());
        ExecutorService racers = Executors.newFixedThreadPool(threads, daemon("racer"));
        ScheduledExecutorService redeliveries = Executors.newSingleThreadScheduledExecutor(daemon("redeliver"));
        run.redeliveries = redeliveries;
        long start = System.nanoTime();
        long deadline = start + timeout.toNanos();
        List<Thread> consumers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            Thread consumer = daemon("consumer").newThread(() -> run.consume(racers, deadline));
            consumers.add(consumer);
            consumer.start();
        }
        for (Thread consumer : consumers) {
            consumer.join(Math.max(1, (deadline - System.nanoTime()) / 1_000_000 + 1000));
        }
        racers.shutdown();
        racers.awaitTermination(5, TimeUnit.SECONDS);
        redeliveries.shutdownNow();
        boolean finished = run.outstanding.get() == 0;
        long end = finished ? run.lastAck.get() : System.nanoTime();
        return new Result(
                end - start,
                workload.messageCount(),
                run.attempts.get(),
                run.crashes.get(),
                run.retries.get(),
                run.deadLettered.get(),
                run.gaveUp.get(),
                run.errors.get(),
                run.firstError.get(),
                finished,
                run.newTrips.perMessage(),
                run.duplicateTrips.perMessage());
    }

    private static java.util.concurrent.ThreadFactory daemon(String name) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, "e2e-" + name + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }

    /** Round trips of single deliveries of one kind, counted on the handling thread. */
    private static final class Trips {
        final java.util.concurrent.atomic.LongAdder trips = new java.util.concurrent.atomic.LongAdder();
        final java.util.concurrent.atomic.LongAdder messages = new java.util.concurrent.atomic.LongAdder();

        void add(long n) {
            trips.add(n);
            messages.increment();
        }

        double perMessage() {
            long m = messages.sum();
            return m == 0 ? Double.NaN : (double) trips.sum() / m;
        }
    }

    private static final class State {
        /** Payments delivered at least once: a later delivery of one is a duplicate (a copy or a redelivery). */
        final java.util.Set<Long> seen = java.util.concurrent.ConcurrentHashMap.newKeySet();

        final Trips newTrips = new Trips();
        final Trips duplicateTrips = new Trips();
        final Contender.Session session;
        final Faults faults;
        final int batchSize;
        final LinkedBlockingQueue<Delivery> ready = new LinkedBlockingQueue<>();
        final AtomicInteger outstanding;
        final AtomicLong lastAck = new AtomicLong();
        final AtomicLong attempts = new AtomicLong();
        final AtomicInteger crashes = new AtomicInteger();
        final AtomicInteger retries = new AtomicInteger();
        final AtomicInteger deadLettered = new AtomicInteger();
        final AtomicInteger gaveUp = new AtomicInteger();
        final AtomicInteger errors = new AtomicInteger();
        final AtomicReference<@Nullable String> firstError = new AtomicReference<>();

        @Nullable
        ScheduledExecutorService redeliveries;

        State(Contender.Session session, Faults faults, int batchSize, int messages) {
            this.session = session;
            this.faults = faults;
            this.batchSize = batchSize;
            this.outstanding = new AtomicInteger(messages);
        }

        void consume(ExecutorService racers, long deadline) {
            try {
                while (outstanding.get() > 0 && System.nanoTime() < deadline) {
                    Delivery first = ready.poll(10, TimeUnit.MILLISECONDS);
                    if (first == null) {
                        continue;
                    }
                    List<Delivery> batch = new ArrayList<>(batchSize);
                    batch.add(first);
                    if (batchSize > 1) {
                        ready.drainTo(batch, batchSize - 1);
                    }
                    List<Delivery> racing = new ArrayList<>();
                    for (int i = 0; i < batch.size(); i++) {
                        Delivery racer = batch.get(i).racer();
                        if (racer != null) {
                            racing.add(racer);
                            batch.set(i, batch.get(i).alone());
                        }
                    }
                    if (!racing.isEmpty()) {
                        racers.execute(() -> handle(racing));
                    }
                    handle(batch);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        void handle(List<Delivery> batch) {
            faults.reborn();
            attempts.addAndGet(batch.size());
            List<Answer> answers;
            @Nullable Trips kind = null;
            if (batch.size() == 1) {
                kind = seen.add(batch.get(0).payment().id()) ? newTrips : duplicateTrips;
            }
            long tripsBefore = CountingSocketFactory.onThisThread();
            try {
                answers = session.deliver(batch);
            } catch (Faults.Crash crash) {
                crashes.incrementAndGet();
                batch.forEach(d -> redeliver(d, 0));
                return;
            } catch (Exception | Error e) {
                errors.incrementAndGet();
                firstError.compareAndSet(null, e.toString());
                batch.forEach(d -> redeliver(d, 10));
                return;
            } finally {
                if (kind != null) {
                    kind.add(CountingSocketFactory.onThisThread() - tripsBefore);
                }
            }
            for (int i = 0; i < batch.size(); i++) {
                Answer answer = answers.get(i);
                switch (answer.kind()) {
                    case ACK -> acked();
                    case DEAD_LETTER -> {
                        deadLettered.incrementAndGet();
                        acked();
                    }
                    case RETRY -> {
                        retries.incrementAndGet();
                        redeliver(batch.get(i), Math.min(answer.retryMillis(), 5_000));
                    }
                }
            }
        }

        private void acked() {
            if (outstanding.decrementAndGet() == 0) {
                lastAck.set(System.nanoTime());
            }
        }

        private void redeliver(Delivery d, long delayMillis) {
            Delivery again = d.redelivered();
            if (again.attempt() > MAX_ATTEMPTS) {
                gaveUp.incrementAndGet();
                acked();
                return;
            }
            ScheduledExecutorService later = redeliveries;
            if (delayMillis <= 0 || later == null) {
                ready.add(again);
            } else {
                try {
                    later.schedule(() -> ready.add(again), delayMillis, TimeUnit.MILLISECONDS);
                } catch (java.util.concurrent.RejectedExecutionException e) {
                    ready.add(again);
                }
            }
        }
    }
}
