package dev.idem.id;

import static dev.idem.id.MessageIdGeneratorTest.assertStrictlyIncreasing;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.id.IdGenerationException.Reason;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Leased node ids. Leases last an hour so that the background renewal (every 20 minutes of real time) never runs
 * during a test: the tests renew by hand and move the injected clocks.
 */
class LeasedNodeIdTest {
    private static final Duration LEASE = Duration.ofHours(1);
    private static final Duration REACH = Duration.ofMinutes(54);
    private static final String T0 = "2024-03-01T12:00:00Z";
    private static final String SPACE = "orders";

    private final SteppingClock storeClock = SteppingClock.at(T0);
    private final InMemoryNodeIdLeaseStore store =
            InMemoryNodeIdLeaseStore.builder().clock(storeClock).build();

    @Test
    @Timeout(60)
    void threeLeasedGenerators_issuingConcurrently_neverCollide() throws Exception {
        InMemoryNodeIdLeaseStore liveStore = InMemoryNodeIdLeaseStore.create();
        List<MessageIdGenerator> generators = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            generators.add(MessageIdGenerator.builder()
                    .nodeIdLease(liveStore, SPACE)
                    .prefix("ORDER")
                    .build());
        }
        int perGenerator = 200_000;
        ExecutorService pool = Executors.newFixedThreadPool(3);
        CountDownLatch start = new CountDownLatch(1);
        List<Future<long[]>> longs = new ArrayList<>();
        List<Future<List<String>>> strings = new ArrayList<>();
        for (MessageIdGenerator g : generators) {
            longs.add(pool.submit(() -> {
                start.await();
                long[] ids = new long[perGenerator];
                for (int i = 0; i < perGenerator; i++) {
                    ids[i] = g.nextLong();
                }
                return ids;
            }));
            strings.add(pool.submit(() -> {
                start.await();
                List<String> ids = new ArrayList<>();
                for (int i = 0; i < 20_000; i++) {
                    ids.add(g.nextString());
                }
                return ids;
            }));
        }
        start.countDown();

        long[] all = new long[3 * perGenerator];
        Set<String> allStrings = new HashSet<>();
        for (int g = 0; g < 3; g++) {
            long[] ids = longs.get(g).get();
            assertStrictlyIncreasing(ids);
            System.arraycopy(ids, 0, all, g * perGenerator, perGenerator);
            allStrings.addAll(strings.get(g).get());
        }
        pool.shutdown();
        Arrays.sort(all);
        for (int i = 1; i < all.length; i++) {
            assertThat(all[i]).as("id %d issued twice", all[i]).isNotEqualTo(all[i - 1]);
        }
        assertThat(allStrings).hasSize(3 * 20_000);
        assertThat(generators).extracting(MessageIdGenerator::nodeId).containsExactlyInAnyOrder(0, 1, 2);
        generators.forEach(MessageIdGenerator::close);
    }

    @Test
    void fourthGenerator_cannotTakeALiveNodeId_andOneMoreThanTheNodeIdsIsRefused() {
        MessageIdFormat fourNodes = MessageIdFormat.builder().nodeBits(2).build();
        List<Integer> taken = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            taken.add(leased(storeClock, fourNodes).nodeId());
        }

        MessageIdGenerator fourth = leased(storeClock, fourNodes);

        assertThat(taken).containsExactly(0, 1, 2);
        assertThat(fourth.nodeId()).isEqualTo(3);
        assertThatThrownBy(() -> leased(storeClock, fourNodes))
                .isInstanceOf(IdGenerationException.class)
                .hasMessageContaining("every node id 0 to 3 of id space 'orders' in in-memory is leased")
                .satisfies(e -> assertThat(((IdGenerationException) e).reason()).isEqualTo(Reason.NO_FREE_NODE_ID));
    }

    @Test
    void leaseNotRenewedInTime_stopsIssuing_andARenewalResumesIt() {
        MessageIdGenerator generator = leased(storeClock, MessageIdFormat.defaults());
        long before = generator.nextLong();

        storeClock.advance(REACH.plusSeconds(1));

        assertThatThrownBy(generator::nextLong)
                .isInstanceOf(IdGenerationException.class)
                .hasMessageContaining("was not renewed in time")
                .satisfies(
                        e -> assertThat(((IdGenerationException) e).reason()).isEqualTo(Reason.NODE_ID_LEASE_EXPIRED));
        assertThat(generator.renewLease()).isTrue();
        assertThat(generator.nextLong()).isGreaterThan(before);
    }

    @Test
    void renewalsFailingWhileTheStoreIsDown_keepIssuingUntilTheReservationEnds_thenStop() {
        MessageIdGenerator generator = leased(storeClock, MessageIdFormat.defaults());
        store.close();

        assertThat(generator.renewLease()).isFalse();
        storeClock.advance(REACH.minusSeconds(1));
        generator.nextLong();
        storeClock.advance(Duration.ofSeconds(2));

        assertThatThrownBy(generator::nextLong)
                .hasMessageContaining("the store is closed")
                .satisfies(
                        e -> assertThat(((IdGenerationException) e).reason()).isEqualTo(Reason.NODE_ID_LEASE_EXPIRED));
    }

    @Test
    void renewalThatThrowsAnUnexpectedException_isAFailedRenewal_andTheNextRenewalWorks() {
        var flaky = new FlakyRenewals(store, 1);
        MessageIdGenerator generator = MessageIdGenerator.builder()
                .nodeIdLease(flaky, SPACE)
                .lease(LEASE)
                .clock(storeClock)
                .build();

        assertThat(generator.renewLease()).isFalse();
        storeClock.advance(REACH.plusSeconds(1));
        assertThatThrownBy(generator::nextLong).hasMessageContaining("IllegalStateException: driver bug");
        assertThat(generator.renewLease()).isTrue();
        generator.nextLong();
        generator.close();
    }

    @Test
    @Timeout(30)
    void backgroundRenewal_survivesARenewalThatThrows_andKeepsRenewing() throws Exception {
        var flaky = new FlakyRenewals(InMemoryNodeIdLeaseStore.create(), 1);
        try (MessageIdGenerator generator = MessageIdGenerator.builder()
                .nodeIdLease(flaky, SPACE)
                .lease(Duration.ofSeconds(1))
                .build()) {
            assertThat(flaky.renewed.await(10, java.util.concurrent.TimeUnit.SECONDS))
                    .as("a renewal succeeded after the one that threw")
                    .isTrue();
            generator.nextLong();
        }
    }

    /** A lease store whose first {@code failures} renewals throw a runtime exception that is not "unavailable". */
    private static final class FlakyRenewals implements dev.idem.id.spi.NodeIdLeaseStore {
        private final dev.idem.id.spi.NodeIdLeaseStore delegate;
        private final java.util.concurrent.atomic.AtomicInteger failuresLeft;
        final CountDownLatch renewed = new CountDownLatch(1);

        FlakyRenewals(dev.idem.id.spi.NodeIdLeaseStore delegate, int failures) {
            this.delegate = delegate;
            this.failuresLeft = new java.util.concurrent.atomic.AtomicInteger(failures);
        }

        @Override
        public java.util.Optional<dev.idem.id.spi.NodeIdGrant> acquire(
                String space, String owner, int maxNodeId, Duration lease, Instant reservedUntil) {
            return delegate.acquire(space, owner, maxNodeId, lease, reservedUntil);
        }

        @Override
        public dev.idem.spi.UpdateResult renew(
                String space, int nodeId, String owner, Duration lease, Instant reservedUntil) {
            if (failuresLeft.getAndDecrement() > 0) {
                throw new IllegalStateException("driver bug");
            }
            dev.idem.spi.UpdateResult result = delegate.renew(space, nodeId, owner, lease, reservedUntil);
            renewed.countDown();
            return result;
        }

        @Override
        public dev.idem.spi.UpdateResult release(String space, int nodeId, String owner, Instant highestIssued) {
            return delegate.release(space, nodeId, owner, highestIssued);
        }

        @Override
        public String describe() {
            return "flaky(" + delegate.describe() + ")";
        }

        @Override
        public void close() {
            delegate.close();
        }
    }

    @Test
    void lapsedLeaseTakenByAnotherGenerator_isLostForGood_andTheNewHolderIssuesAboveIt() {
        MessageIdGenerator first = leased(storeClock, MessageIdFormat.defaults());
        long[] firstIds = {first.nextLong(), first.nextLong()};

        storeClock.advance(LEASE.plusSeconds(1));
        MessageIdGenerator second = leased(storeClock, MessageIdFormat.defaults());
        long secondId = second.nextLong();

        assertThat(second.nodeId()).isEqualTo(first.nodeId());
        assertThat(secondId).isGreaterThan(firstIds[1]);
        assertThat(first.renewLease()).isFalse();
        assertThatThrownBy(first::nextLong)
                .hasMessageContaining("is held by another generator now")
                .satisfies(e -> assertThat(((IdGenerationException) e).reason()).isEqualTo(Reason.NODE_ID_LEASE_LOST));
        storeClock.advance(Duration.ofSeconds(1));
        assertThatThrownBy(first::nextLong).isInstanceOf(IdGenerationException.class);
    }

    @Test
    void nodeRestartingAfterACrash_withItsClockBehind_startsAboveEverythingTheCrashedNodeMayHaveIssued() {
        SteppingClock nodeClock = SteppingClock.at(T0);
        MessageIdGenerator crashed = leased(nodeClock, MessageIdFormat.defaults());
        long lastOfCrashed = 0;
        for (int i = 0; i < 1000; i++) {
            lastOfCrashed = crashed.nextLong();
            nodeClock.advance(Duration.ofMillis(1));
        }
        // The node dies without closing; its lease ends by the store's clock; it comes back with its clock about 3 s
        // behind the last id it issued.
        storeClock.advance(LEASE.plusSeconds(1));
        nodeClock.set(Instant.parse(T0).minusSeconds(2));
        MessageIdGenerator restarted = leased(nodeClock, MessageIdFormat.defaults());

        assertThat(restarted.nodeId()).isEqualTo(crashed.nodeId());
        assertThatThrownBy(restarted::nextLong)
                .satisfies(
                        e -> assertThat(((IdGenerationException) e).reason()).isEqualTo(Reason.CLOCK_MOVED_BACKWARDS));

        // Even with a clock past the crashed node's last id, the restarted one waits for the crashed one's
        // reservation (the high-water mark), which its own first reservation does not reach: it must renew first.
        nodeClock.set(Instant.parse(T0).plus(REACH).plusMillis(1));
        assertThatThrownBy(restarted::nextLong)
                .satisfies(
                        e -> assertThat(((IdGenerationException) e).reason()).isEqualTo(Reason.NODE_ID_LEASE_EXPIRED));
        assertThat(restarted.renewLease()).isTrue();
        long first = restarted.nextLong();

        assertThat(first).isGreaterThan(lastOfCrashed);
        assertThat(restarted.format().parse(first).timestamp())
                .isAfter(Instant.parse(T0).plus(REACH));
    }

    @Test
    void cleanRelease_recordsTheHighestIssued_soTheNextHolderNeedNotWaitOutTheReservation() {
        SteppingClock nodeClock = SteppingClock.at(T0);
        MessageIdGenerator first = leased(nodeClock, MessageIdFormat.defaults());
        long last = first.nextLong();
        first.close();

        assertThat(store.highWaterMark(SPACE, 0)).isEqualTo(Instant.parse(T0));
        nodeClock.set(Instant.parse(T0).plusMillis(1));
        MessageIdGenerator next = leased(nodeClock, MessageIdFormat.defaults());

        assertThat(next.nodeId()).isZero();
        assertThat(next.nextLong()).isGreaterThan(last);
    }

    @Test
    void nextHolderWithClockSlightlyBehindTheReleasedMark_waitsItOut_andFarBehind_isRefused() {
        SteppingClock nodeClock = SteppingClock.at(T0);
        MessageIdGenerator first = leased(nodeClock, MessageIdFormat.defaults());
        long last = first.nextLong();
        first.close();

        nodeClock.set(Instant.parse(T0).minusSeconds(5));
        MessageIdGenerator farBehind = leased(nodeClock, MessageIdFormat.defaults());
        assertThatThrownBy(farBehind::nextLong)
                .satisfies(
                        e -> assertThat(((IdGenerationException) e).reason()).isEqualTo(Reason.CLOCK_MOVED_BACKWARDS));
        farBehind.close();

        nodeClock.set(Instant.parse(T0).minusMillis(300));
        nodeClock.stepEveryRead(Duration.ofMillis(50));
        MessageIdGenerator slightlyBehind = leased(nodeClock, MessageIdFormat.defaults());
        assertThat(slightlyBehind.nextLong()).isGreaterThan(last);
    }

    private MessageIdGenerator leased(Clock clock, MessageIdFormat format) {
        return MessageIdGenerator.builder()
                .format(format)
                .nodeIdLease(store, SPACE)
                .lease(LEASE)
                .clock(clock)
                .build();
    }
}
