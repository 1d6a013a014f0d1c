package dev.idem.testkit;

import dev.idem.Outcome;
import dev.idem.spi.Attempts;
import dev.idem.spi.DeliveryDecision;
import dev.idem.spi.KeyBytes;
import dev.idem.spi.Verdict;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.DelayQueue;
import java.util.concurrent.Delayed;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;

/**
 * A broker in memory with the smallest adapter that settles every delivery through {@link DeliveryDecision}: the
 * reference the {@link AdapterContract} is checked against. A message taken by a consumer that crashes goes back to
 * the queue; attempts travel with the message inside the broker, never in its headers.
 */
final class InMemoryBroker {
    record Envelope(TestMessage message, Attempts attempts, long dueNanos) implements Delayed {
        @Override
        public long getDelay(TimeUnit unit) {
            return unit.convert(dueNanos - System.nanoTime(), TimeUnit.NANOSECONDS);
        }

        @Override
        public int compareTo(Delayed other) {
            return Long.compare(dueNanos, ((Envelope) other).dueNanos);
        }
    }

    record Dead(TestMessage message, AdapterContract.DeadLetter letter) {}

    private final DelayQueue<Envelope> queue = new DelayQueue<>();
    final List<Dead> deadLetters = new CopyOnWriteArrayList<>();

    void publish(TestMessage message) {
        queue.add(new Envelope(message, Attempts.NONE, System.nanoTime()));
    }

    /** How a consumer turns what its handler answered or threw into a verdict. */
    interface Settlement {
        Verdict of(Outcome outcome, Attempts attempts);

        Verdict of(Exception thrown, Attempts attempts);

        /** The reference: the one delivery decision. */
        static Settlement by(DeliveryDecision decision) {
            return new Settlement() {
                @Override
                public Verdict of(Outcome outcome, Attempts attempts) {
                    return decision.decide(outcome, attempts);
                }

                @Override
                public Verdict of(Exception thrown, Attempts attempts) {
                    return decision.decide(thrown, attempts);
                }
            };
        }
    }

    AdapterContract.RunningConsumer consume(AdapterContract.ContractHandler handler, Settlement settlement) {
        Consumer consumer = new Consumer(handler, settlement);
        consumer.thread.start();
        return AdapterContract.RunningConsumer.of(consumer::stop, consumer::crash);
    }

    private final class Consumer {
        final AdapterContract.ContractHandler handler;
        final Settlement settlement;
        final AtomicBoolean running = new AtomicBoolean(true);
        final AtomicBoolean crashed = new AtomicBoolean();
        final Thread thread = new Thread(this::loop, "in-memory-consumer");
        volatile @Nullable Envelope inFlight;

        Consumer(AdapterContract.ContractHandler handler, Settlement settlement) {
            this.handler = handler;
            this.settlement = settlement;
        }

        void loop() {
            while (running.get()) {
                Envelope next;
                try {
                    next = queue.poll(10, TimeUnit.MILLISECONDS);
                } catch (InterruptedException e) {
                    return;
                }
                if (next == null) {
                    continue;
                }
                inFlight = next;
                Verdict verdict = handle(next);
                synchronized (this) {
                    if (!crashed.get()) {
                        settle(next, verdict);
                    }
                    inFlight = null;
                }
            }
        }

        Verdict handle(Envelope envelope) {
            byte[] keyBytes = envelope.message().keyBytes();
            if (keyBytes == null) {
                return settlement.of(Outcome.rejected("no idempotency key"), envelope.attempts());
            }
            String key = KeyBytes.exactKey(keyBytes);
            try {
                return settlement.of(handler.handle(key, envelope.message().payload()), envelope.attempts());
            } catch (Exception e) {
                return settlement.of(e, envelope.attempts());
            }
        }

        void settle(Envelope envelope, Verdict verdict) {
            if (verdict instanceof Verdict.Retry retry) {
                queue.add(new Envelope(
                        envelope.message(),
                        retry.attempts(),
                        System.nanoTime() + retry.delay().toNanos()));
            } else if (verdict instanceof Verdict.DeadLetter dead) {
                byte[] keyBytes = envelope.message().keyBytes();
                String key = keyBytes == null ? null : KeyBytes.exactKey(keyBytes);
                deadLetters.add(new Dead(envelope.message(), new AdapterContract.DeadLetter(key, dead.reason())));
            }
        }

        void stop() throws InterruptedException {
            running.set(false);
            thread.join(Duration.ofSeconds(30).toMillis());
        }

        void crash() {
            running.set(false);
            synchronized (this) {
                crashed.set(true);
                Envelope taken = inFlight;
                if (taken != null) {
                    queue.add(new Envelope(taken.message(), taken.attempts(), System.nanoTime()));
                }
            }
        }
    }
}
