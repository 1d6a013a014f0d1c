package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.StoreUnavailableException;
import dev.idem.id.spi.NodeIdGrant;
import dev.idem.id.spi.NodeIdLeaseStore;
import dev.idem.spi.UpdateResult;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The contract every {@link NodeIdLeaseStore} passes. A store's test extends it and says how to make the store:
 *
 * <pre>{@code
 * class JdbcNodeIdLeaseStoreContractTest extends NodeIdLeaseStoreContract {
 *     protected NodeIdLeaseStore createStore(Clock clock) { return JdbcNodeIdLeaseStore.builder(ds).clock(clock).build(); }
 *     protected NodeIdLeaseStore createUnavailableStore(Clock clock) { ... a closed port ... }
 * }
 * }</pre>
 *
 * Time is driven by a {@link MutableClock} handed to the store; nothing sleeps. Each test uses its own id space.
 */
public abstract class NodeIdLeaseStoreContract {
    protected static final Duration LEASE = Duration.ofSeconds(30);

    protected final MutableClock clock = MutableClock.atNow();
    protected NodeIdLeaseStore store;
    protected String space;

    /** A store whose leases end by {@code clock}. */
    protected abstract NodeIdLeaseStore createStore(Clock clock);

    /** A store that cannot reach its backend, to check the documented exception. */
    protected abstract NodeIdLeaseStore createUnavailableStore(Clock clock);

    @BeforeEach
    void openStore() {
        store = createStore(clock);
        space = "s" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
    }

    @AfterEach
    void closeStore() {
        store.close();
    }

    private Instant now() {
        return clock.instant();
    }

    private NodeIdGrant acquire(String owner, int maxNodeId, Instant reservedUntil) {
        return store.acquire(space, owner, maxNodeId, LEASE, reservedUntil)
                .orElseThrow(() -> new AssertionError("no node id granted to " + owner));
    }

    @Test
    void firstAcquire_ofANewSpace_grantsNodeZero_withNoHighWaterMark() {
        NodeIdGrant grant = acquire("a", 7, now().plusSeconds(27));

        assertThat(grant.nodeId()).isZero();
        assertThat(grant.owner()).isEqualTo("a");
        assertThat(grant.highWaterMark()).isEqualTo(Instant.EPOCH);
        assertThat(grant.expiresAt()).isEqualTo(now().plus(LEASE));
    }

    @Test
    void acquires_whileLeasesLive_grantDistinctNodeIdsLowestFirst_untilNoneIsFree() {
        List<Integer> granted = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            granted.add(acquire("owner" + i, 3, now()).nodeId());
        }

        assertThat(granted).containsExactly(0, 1, 2, 3);
        assertThat(store.acquire(space, "late", 3, LEASE, now())).isEmpty();
    }

    @Test
    void leaseThatEnded_isGrantedAgain_withThePreviousHoldersReservationAsMark() {
        Instant reserved = now().plusSeconds(27);
        acquire("crashed", 3, reserved);

        clock.advance(LEASE.plusSeconds(1));
        NodeIdGrant next = acquire("next", 3, now().plusSeconds(27));

        assertThat(next.nodeId()).isZero();
        assertThat(next.highWaterMark()).isEqualTo(reserved);
    }

    @Test
    void leaseOneMomentBeforeItsEnd_isNotGranted() {
        acquire("live", 0, now());

        clock.advance(LEASE.minusMillis(1));

        assertThat(store.acquire(space, "other", 0, LEASE, now())).isEmpty();
    }

    @Test
    void renewal_byTheOwner_extendsTheLeaseFromNow() {
        acquire("a", 0, now());
        clock.advance(Duration.ofSeconds(20));

        assertThat(store.renew(space, 0, "a", LEASE, now())).isEqualTo(UpdateResult.APPLIED);
        clock.advance(Duration.ofSeconds(20));

        assertThat(store.acquire(space, "b", 0, LEASE, now())).isEmpty();
    }

    @Test
    void renewal_raisesTheMark_andNeverLowersIt() {
        Instant start = now();
        acquire("a", 0, start.plusSeconds(27));
        store.renew(space, 0, "a", LEASE, start.plusSeconds(60));
        store.renew(space, 0, "a", LEASE, start.plusSeconds(40));

        clock.advance(Duration.ofMinutes(5));
        NodeIdGrant next = acquire("b", 0, now());

        assertThat(next.highWaterMark()).isEqualTo(start.plusSeconds(60));
    }

    @Test
    void renewal_ofAnEndedLeaseNobodyTook_isApplied() {
        acquire("a", 0, now());
        clock.advance(LEASE.plusSeconds(5));

        assertThat(store.renew(space, 0, "a", LEASE, now())).isEqualTo(UpdateResult.APPLIED);
        assertThat(store.acquire(space, "b", 0, LEASE, now())).isEmpty();
    }

    @Test
    void renewal_byAStaleOwnerAfterAnotherTookTheNodeId_isNotOwner() {
        acquire("stale", 0, now());
        clock.advance(LEASE.plusSeconds(1));
        acquire("new", 0, now());

        assertThat(store.renew(space, 0, "stale", LEASE, now())).isEqualTo(UpdateResult.NOT_OWNER);
        assertThat(store.renew(space, 0, "new", LEASE, now())).isEqualTo(UpdateResult.APPLIED);
    }

    @Test
    void renewalOrRelease_ofANodeIdNeverLeased_isNotFound() {
        assertThat(store.renew(space, 5, "a", LEASE, now())).isEqualTo(UpdateResult.NOT_FOUND);
        assertThat(store.release(space, 5, "a", now())).isEqualTo(UpdateResult.NOT_FOUND);
    }

    @Test
    void release_freesTheNodeIdAtOnce_andRecordsTheHighestIssued() {
        Instant start = now();
        acquire("a", 0, start.plusSeconds(27));
        Instant highestIssued = start.plusMillis(1500);

        assertThat(store.release(space, 0, "a", highestIssued)).isEqualTo(UpdateResult.APPLIED);
        NodeIdGrant next = acquire("b", 0, now());

        assertThat(next.nodeId()).isZero();
        assertThat(next.highWaterMark()).isEqualTo(highestIssued);
    }

    @Test
    void release_neverSetsTheMarkBelowTheOneGrantedWithTheLease() {
        Instant reserved = now().plusSeconds(27);
        acquire("crashed", 0, reserved);
        clock.advance(LEASE.plusSeconds(1));
        acquire("b", 0, now());

        store.release(space, 0, "b", Instant.EPOCH);
        NodeIdGrant next = acquire("c", 0, now());

        assertThat(next.highWaterMark()).isEqualTo(reserved);
    }

    @Test
    void release_byAStaleOwner_isNotOwner_andLeavesTheNewLeaseAlone() {
        acquire("stale", 0, now());
        clock.advance(LEASE.plusSeconds(1));
        acquire("new", 0, now());

        assertThat(store.release(space, 0, "stale", now())).isEqualTo(UpdateResult.NOT_OWNER);
        assertThat(store.acquire(space, "other", 0, LEASE, now())).isEmpty();
    }

    @Test
    void spaces_areIndependent() {
        acquire("a", 0, now());

        Optional<NodeIdGrant> otherSpace = store.acquire(space + "-other", "b", 0, LEASE, now());

        assertThat(otherSpace).map(NodeIdGrant::nodeId).contains(0);
    }

    @Test
    @Timeout(60)
    void concurrentAcquires_neverGrantOneNodeIdTwice() throws Exception {
        int nodes = 16;
        ExecutorService pool = Executors.newFixedThreadPool(8);
        CountDownLatch start = new CountDownLatch(1);
        List<Future<Optional<NodeIdGrant>>> results = new ArrayList<>();
        for (int i = 0; i < nodes + 4; i++) {
            String owner = "owner" + i;
            results.add(pool.submit(() -> {
                start.await();
                return store.acquire(space, owner, nodes - 1, LEASE, now());
            }));
        }
        start.countDown();
        List<Integer> granted = new ArrayList<>();
        int refused = 0;
        for (Future<Optional<NodeIdGrant>> f : results) {
            Optional<NodeIdGrant> grant = f.get();
            if (grant.isPresent()) {
                granted.add(grant.get().nodeId());
            } else {
                refused++;
            }
        }
        pool.shutdown();

        assertThat(granted)
                .hasSize(nodes)
                .doesNotHaveDuplicates()
                .allSatisfy(n -> assertThat(n).isBetween(0, nodes - 1));
        assertThat(refused).isEqualTo(4);
    }

    @Test
    void unavailableStore_throwsStoreUnavailable() {
        try (NodeIdLeaseStore down = createUnavailableStore(clock)) {
            assertThatThrownBy(() -> down.acquire(space, "a", 3, LEASE, now()))
                    .isInstanceOf(StoreUnavailableException.class);
            assertThatThrownBy(() -> down.renew(space, 0, "a", LEASE, now()))
                    .isInstanceOf(StoreUnavailableException.class);
            assertThatThrownBy(() -> down.release(space, 0, "a", now())).isInstanceOf(StoreUnavailableException.class);
        }
    }
}
