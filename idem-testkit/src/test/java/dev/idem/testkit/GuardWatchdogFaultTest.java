package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Guard;
import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyKey;
import dev.idem.InMemoryStore;
import dev.idem.Outcome;
import dev.idem.StoreUnavailableException;
import dev.idem.spi.IdempotencyStore;
import dev.idem.spi.StoredRecord;
import dev.idem.spi.UpdateResult;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The swept lease watchdog under faults: a failed extension, a throwable that escapes logging, an idle guard, a lost lease. */
class GuardWatchdogFaultTest {

    private final List<IdempotencyEvent> events = new CopyOnWriteArrayList<>();

    /**
     * A store command timeout longer than a sixth of the lease (Redis default 2 s with a 10 s lease; here 250 ms
     * with 1,200 ms): the failed extension pushed the next attempt a full third of the lease after the timeout, and
     * then to the next sweep, past the end of the lease. Before the sweep the next tick came a third of the lease
     * after the failed one started, well before the lease ended. The store here behaves as Redis does: a lapsed
     * lease is gone, and its extension answers NOT_FOUND.
     */
    @Test
    void watchdog_retriesAFailedExtension_beforeTheLeaseLapses() throws Exception {
        try (InMemoryStore realTime = InMemoryStore.create()) {
            ExpiringStore store = new ExpiringStore(realTime, Duration.ofMillis(250));
            try (Guard g = Guard.builder(store)
                    .namespace("payments")
                    .lease(Duration.ofMillis(1200))
                    .listener(events::add)
                    .build()) {
                Outcome outcome = g.run(
                        "pay-1", () -> LeaseWaits.waitFor(() -> store.extendCalls.get() >= 2, Duration.ofSeconds(10)));

                assertThat(store.extendCalls)
                        .as("extension retried after the failure")
                        .hasValueGreaterThan(1);
                assertThat(store.lapsed)
                        .as("extensions attempted after the lease had lapsed")
                        .isEmpty();
                assertThat(events).extracting(IdempotencyEvent::type).doesNotContain(IdempotencyEvent.Type.LEASE_LOST);
                assertThat(outcome.type()).isEqualTo(Outcome.Type.PROCESSED);
            }
        }
    }

    /**
     * Whatever escapes a sweep (here a store error that cannot even be printed, so logging the failure throws; the
     * same as an OutOfMemoryError while building the log line) ended the one periodic sweep of the watchdog while
     * {@code sweeping} stayed set: no later handling of the guard was ever extended again. Before the rewrite it cost
     * the renewals of that one handling.
     */
    @Test
    void watchdog_keepsExtendingLaterHandlings_afterAThrowableEscapedItsLogging() throws Exception {
        try (InMemoryStore realTime = InMemoryStore.create()) {
            ThrowingStore erring = ThrowingStore.erringFirst(realTime, ThrowingStore.Op.EXTEND, new Unprintable(), 1);
            try (Guard g = Guard.builder(erring)
                    .namespace("payments")
                    .lease(Duration.ofMillis(300))
                    .listener(events::add)
                    .build()) {
                g.run("pay-1", () -> LeaseWaits.waitFor(() -> erring.extendCalls.get() >= 1, Duration.ofSeconds(10)));
                assertThat(erring.extendCalls)
                        .as("the failing extension was attempted")
                        .hasValueGreaterThan(0);

                IdempotencyKey key = IdempotencyKey.of("payments", "pay-2");
                AtomicBoolean extended = new AtomicBoolean();
                Outcome outcome = g.run(
                        "pay-2", () -> extended.set(LeaseWaits.extendedWithin(realTime, key, Duration.ofSeconds(5))));

                assertThat(extended).as("a later handling's lease extended").isTrue();
                assertThat(outcome.type()).isEqualTo(Outcome.Type.PROCESSED);
            }
        }
    }

    /**
     * A guard that handled once and was closed (an hour's lease): its watchdog's sweep stayed scheduled on the shared
     * thread for a sixth of the lease (ten minutes here, days for day-long leases), holding the watchdog, the store
     * and the listener. Before the rewrite, ending the watch removed its task at once.
     */
    @Test
    void anIdleClosedGuard_leavesNoPeriodicTaskHoldingItsStore() throws Exception {
        WeakReference<InMemoryStore> store = handleOnceAndDrop();
        LeaseWaits.waitFor(
                () -> {
                    System.gc();
                    return store.get() == null;
                },
                Duration.ofSeconds(10));
        assertThat(store.get())
                .as("the store of an idle, closed guard is still held")
                .isNull();
    }

    private static WeakReference<InMemoryStore> handleOnceAndDrop() {
        InMemoryStore s = InMemoryStore.create();
        Guard g = Guard.builder(s)
                .namespace("payments")
                .lease(Duration.ofHours(1))
                .build();
        assertThat(g.run("pay-1", () -> {}).type()).isEqualTo(Outcome.Type.PROCESSED);
        g.close();
        s.close();
        return new WeakReference<>(s);
    }

    /**
     * (Pre-existing, kept by the rewrite.) A listener that throws an Error when told LEASE_LOST (a metrics class
     * missing) left the lost watch open: the lease was "extended" again and LEASE_LOST reported again, for as long as
     * the handler ran.
     */
    @Test
    void leaseLost_endsTheRenewals_andIsReportedOnce_evenWhenTheListenerThrows() throws Exception {
        try (InMemoryStore realTime = InMemoryStore.create()) {
            AtomicInteger lostExtends = new AtomicInteger();
            IdempotencyStore stolen = new ExpiringStore(realTime, Duration.ZERO) {
                @Override
                public UpdateResult extend(IdempotencyKey key, String owner, Duration lease) {
                    lostExtends.incrementAndGet();
                    return UpdateResult.NOT_OWNER; // another consumer took the key over
                }
            };
            try (Guard g = Guard.builder(stolen)
                    .namespace("payments")
                    .lease(Duration.ofMillis(60))
                    .listener(event -> {
                        events.add(event);
                        if (event.type() == IdempotencyEvent.Type.LEASE_LOST) {
                            throw new NoClassDefFoundError("io/metrics/Counter");
                        }
                    })
                    .build()) {
                g.run("pay-1", () -> LeaseWaits.waitFor(() -> lostExtends.get() >= 2, Duration.ofSeconds(2)));
            }
            assertThat(lostExtends).as("extensions after the lease was lost").hasValue(1);
            assertThat(events)
                    .filteredOn(e -> e.type() == IdempotencyEvent.Type.LEASE_LOST)
                    .hasSize(1);
        }
    }

    /** An error whose text cannot be rendered: rendering it throws another. */
    private static final class Unprintable extends Error {
        Unprintable() {
            super("unprintable");
        }

        @Override
        public String toString() {
            throw new Unprintable();
        }
    }

    /**
     * Real time, Redis semantics: a lease that has lapsed is gone (its extension answers NOT_FOUND, and is recorded
     * in {@link #lapsed}); the first extension fails after {@code firstFailureTakes}, as a command timeout does.
     */
    private static class ExpiringStore extends ForwardingStore {
        final Duration firstFailureTakes;
        final AtomicInteger extendCalls = new AtomicInteger();
        final List<String> lapsed = new CopyOnWriteArrayList<>();

        ExpiringStore(IdempotencyStore delegate, Duration firstFailureTakes) {
            super(delegate);
            this.firstFailureTakes = firstFailureTakes;
        }

        @Override
        public UpdateResult extend(IdempotencyKey key, String owner, Duration lease) {
            int call = extendCalls.incrementAndGet();
            if (call == 1) {
                try {
                    Thread.sleep(firstFailureTakes.toMillis());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                throw new StoreUnavailableException(describe(), "command timed out", null);
            }
            Optional<StoredRecord> held = delegate.lookup(key);
            Instant now = Instant.now();
            if (held.isPresent()
                    && held.get().state() == StoredRecord.State.PROCESSING
                    && !held.get().expiresAt().isAfter(now)) {
                lapsed.add("call " + call + ": lease ended " + held.get().expiresAt() + ", extended at " + now);
                return UpdateResult.NOT_FOUND;
            }
            return delegate.extend(key, owner, lease);
        }

        @Override
        public String describe() {
            return "expiring(" + delegate.describe() + ")";
        }
    }
}
