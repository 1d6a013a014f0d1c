package dev.idem.demo;

import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import dev.idem.demo.ConsumerFaults.Fault;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Consumes the whole flow for one strategy through the broker's Idem adapter ({@link LabBroker#subscribe}) and
 * injects the consumer-side faults around the strategy's handler:
 *
 * <ul>
 *   <li>timeout: the first consumer is slow; the same message reaches a second consumer while the first is still
 *       inside its effect: handed to a second consumer thread where the broker's redelivery takes seconds (Kafka's
 *       {@code max.poll.interval.ms}), or by cutting the consumer off the broker inside the effect where the broker
 *       redelivers at once ({@link LabBroker.Subscription#cutOff()});
 *   <li>concurrent: a second consumer gets the message at the same instant (where the broker can do it);
 *   <li>crash: after the handler committed its database transaction the consumer dies (the handler throws an {@link
 *       Error}, which stops the adapter's consumer without acknowledging, like a killed process); a new consumer
 *       gets what was not acknowledged.
 * </ul>
 */
final class StrategyRun {
    static final RetryPolicy RETRY = RetryPolicy.builder()
            .initialDelay(Duration.ofMillis(10))
            .multiplier(1.5)
            .maxDelay(Duration.ofMillis(100))
            .maxAttempts(300)
            .jitter(0.2)
            .build();
    private static final Duration OVERLAP_WAIT = Duration.ofSeconds(2);
    private static final Duration RESTART_PAUSE = Duration.ofMillis(500);
    private static final Logger LOG = LoggerFactory.getLogger(StrategyRun.class);
    private static final int LOGGED_RETRIES = 20;

    private final Strategy strategy;
    private final LabBroker broker;
    private final ConsumerFaults faults;
    private final ExecutorService secondConsumer;
    private final Set<String> crashedOnce = ConcurrentHashMap.newKeySet();
    private final Set<String> copiedOnce = ConcurrentHashMap.newKeySet();
    private volatile LabBroker.@Nullable Subscription subscription;
    private volatile long settledBefore;

    final AtomicLong deliveries = new AtomicLong();
    final AtomicLong processed = new AtomicLong();
    final AtomicLong duplicates = new AtomicLong();
    final AtomicLong retries = new AtomicLong();
    final AtomicLong crashes = new AtomicLong();
    final AtomicLong secondCopies = new AtomicLong();
    private volatile long startNanos;
    private volatile long endNanos;
    private volatile boolean finished;
    private volatile @Nullable Throwable failure;

    StrategyRun(Strategy strategy, LabBroker broker, ConsumerFaults faults, ExecutorService secondConsumer) {
        this.strategy = strategy;
        this.broker = broker;
        this.faults = faults;
        this.secondConsumer = secondConsumer;
    }

    Strategy strategy() {
        return strategy;
    }

    /** Copies handled to the end so far: progress. */
    long settled() {
        LabBroker.Subscription s = subscription;
        return s == null ? settledBefore : Math.max(settledBefore, s.settled());
    }

    Duration elapsed() {
        long end = endNanos == 0 ? System.nanoTime() : endNanos;
        return Duration.ofNanos(startNanos == 0 ? 0 : end - startNanos);
    }

    Optional<Throwable> failure() {
        return Optional.ofNullable(failure);
    }

    boolean finished() {
        return finished;
    }

    /** Consumes until every copy is handled and acknowledged, or the deadline passes. */
    void run(long deadlineNanos) {
        startNanos = System.nanoTime();
        LabBroker.Subscription consumer = null;
        try {
            consumer = start(deadlineNanos);
            while (!(finished = consumer.finished()) && System.nanoTime() < deadlineNanos) {
                Thread.sleep(50);
                if (!consumer.isRunning()) {
                    Throwable stopped = consumer.failure().orElse(null);
                    if (!consumer.stoppedByInjection()) {
                        failure = stopped != null
                                ? stopped
                                : new IllegalStateException("the consumer of " + strategy.id() + " stopped");
                        return;
                    }
                    crashes.incrementAndGet();
                    settledBefore = consumer.settled();
                    consumer.close();
                    consumer = start(deadlineNanos);
                }
            }
            if (!finished) {
                failure = new IllegalStateException(strategy.id() + " did not consume the whole flow in time");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            failure = e;
        } catch (Exception e) {
            failure = e;
        } finally {
            if (consumer != null) {
                settledBefore = consumer.settled();
                consumer.close();
            }
            endNanos = System.nanoTime();
        }
    }

    /**
     * Starts a consumer (the first, or the one that takes over from a crashed one), again and again until the
     * deadline, as a supervisor restarts a process that failed to start: a broker slow to answer (a name server's
     * timeout on a loaded machine) delays the start, it does not end the strategy's run.
     */
    private LabBroker.Subscription start(long deadlineNanos) throws Exception {
        while (true) {
            try {
                return subscribe();
            } catch (Exception e) {
                if (System.nanoTime() + RESTART_PAUSE.toNanos() > deadlineNanos) {
                    throw e;
                }
                Thread.sleep(RESTART_PAUSE.toMillis());
            }
        }
    }

    private LabBroker.Subscription subscribe() throws Exception {
        LabBroker.Subscription s = broker.subscribe(strategy, this::handle);
        subscription = s;
        return s;
    }

    private Outcome handle(String key, byte[] payload) {
        OrderEvent event;
        try {
            event = OrderEvent.decode(payload);
        } catch (RuntimeException e) {
            return Outcome.rejected("not an order event: " + e.getMessage(), e);
        }
        if (!event.key().equals(key)) {
            return Outcome.rejected("the message key does not match the event");
        }
        Outcome outcome = deliver(event);
        if (outcome.action() == Outcome.Action.RETRY) {
            logRetry(event, outcome);
        }
        if (outcome.action() != Outcome.Action.RETRY && faults.of(key) == Fault.CRASH && crashedOnce.add(key)) {
            throw new InjectedCrash();
        }
        return outcome;
    }

    /** The first copy on this thread; for TIMEOUT and CONCURRENT messages a second copy on another consumer. */
    private Outcome deliver(OrderEvent event) {
        deliveries.incrementAndGet();
        Fault fault = faults.of(event.key());
        if ((fault != Fault.TIMEOUT && fault != Fault.CONCURRENT) || !copiedOnce.add(event.key())) {
            return count(strategy.handle(Delivery.plain(event)));
        }
        secondCopies.incrementAndGet();
        if (!broker.overlapsInProcess()) {
            return count(strategy.handle(cutOffInside(event)));
        }
        Overlap overlap = new Overlap(event, fault);
        Future<?> second = secondConsumer.submit(overlap::secondCopy);
        Outcome first = count(strategy.handle(overlap.firstCopy()));
        try {
            second.get(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            throw new IllegalStateException("the second consumer's copy of " + event.key() + " did not end", e);
        }
        return first;
    }

    /** The first copy cuts its consumer off the broker inside the effect; the broker redelivers the rest. */
    private Delivery cutOffInside(OrderEvent event) {
        LabBroker.Subscription s = subscription;
        return new Delivery() {
            @Override
            public OrderEvent event() {
                return event;
            }

            @Override
            public void insideEffect() {
                if (s != null) {
                    s.cutOff();
                }
            }
        };
    }

    private void logRetry(OrderEvent event, Outcome outcome) {
        if (retries.incrementAndGet() <= LOGGED_RETRIES) {
            LOG.warn("{} retries {} later: {}", strategy.id(), event.key(), outcome);
        }
    }

    private Outcome count(Outcome outcome) {
        switch (outcome.type()) {
            case PROCESSED -> processed.incrementAndGet();
            case DUPLICATE -> duplicates.incrementAndGet();
            default -> {}
        }
        return outcome;
    }

    /** Two copies of one message that overlap in time. */
    private final class Overlap {
        private final OrderEvent event;
        private final Fault fault;
        private final CountDownLatch firstInside = new CountDownLatch(1);
        private final CountDownLatch secondStarted = new CountDownLatch(1);
        private final CyclicBarrier together = new CyclicBarrier(2);

        Overlap(OrderEvent event, Fault fault) {
            this.event = event;
            this.fault = fault;
        }

        Delivery firstCopy() {
            if (fault == Fault.CONCURRENT) {
                awaitTogether();
                return Delivery.plain(event);
            }
            return new Delivery() {
                @Override
                public OrderEvent event() {
                    return event;
                }

                @Override
                public void insideEffect() throws InterruptedException {
                    if (firstInside.getCount() == 0) {
                        return;
                    }
                    firstInside.countDown();
                    // The slow first consumer: the broker has redelivered; let the second copy get going.
                    secondStarted.await(OVERLAP_WAIT.toMillis(), TimeUnit.MILLISECONDS);
                    Thread.sleep(20);
                }
            };
        }

        void secondCopy() {
            if (fault == Fault.CONCURRENT) {
                awaitTogether();
            } else {
                try {
                    firstInside.await(OVERLAP_WAIT.toMillis(), TimeUnit.MILLISECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
                secondStarted.countDown();
            }
            for (int attempt = 1; ; attempt++) {
                deliveries.incrementAndGet();
                Outcome outcome = count(strategy.handle(Delivery.plain(event)));
                if (outcome.action() != Outcome.Action.RETRY || RETRY.exhausted(attempt)) {
                    return;
                }
                logRetry(event, outcome);
                try {
                    Thread.sleep(RETRY.delayAfter(attempt).toMillis());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }

        private void awaitTogether() {
            try {
                together.await(OVERLAP_WAIT.toMillis(), TimeUnit.MILLISECONDS);
            } catch (Exception e) {
                // the other copy did not come: each goes on alone
            }
        }
    }

    /** The injected crash: thrown after the database commit, before the offset commit; stops the runner. */
    static final class InjectedCrash extends Error {
        private static final long serialVersionUID = 1L;

        InjectedCrash() {
            super("injected crash after the database commit, before the offset commit", null, false, false);
        }
    }
}
