package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.idem.id.IdGenerationException;
import dev.idem.id.IdGenerationException.Reason;
import dev.idem.id.MessageIdFormat;
import dev.idem.id.MessageIdGenerator;
import dev.idem.id.spi.NodeIdLeaseStore;
import java.net.InetSocketAddress;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What {@link MessageIdGenerator}s with leased node ids do on a real {@link NodeIdLeaseStore}: concurrent
 * generators never collide, a generator never takes a live node id, and a generator whose lease lapses (store
 * unreachable, or renewal refused because another generator took the node id) stops issuing. A store's test extends
 * it and says how to reach the server, directly or through a {@link TcpProxy}:
 *
 * <pre>{@code
 * class RedisLeasedMessageIdTest extends LeasedMessageIdContract {
 *     protected InetSocketAddress server() { return InetSocketAddress.createUnresolved("127.0.0.1", 6379); }
 *     protected NodeIdLeaseStore createStore(Clock clock, String host, int port) { ... }
 * }
 * }</pre>
 *
 * Time is driven by {@link MutableClock}s; background renewals (every third of a 1 s lease) are waited for with
 * Awaitility, never by sleeping. Each test uses its own id space.
 */
public abstract class LeasedMessageIdContract {
    private static final Duration SHORT_LEASE = Duration.ofSeconds(1);
    private static final Duration LONG_LEASE = Duration.ofHours(1);
    private static final Duration WAIT = Duration.ofSeconds(20);

    private final Deque<AutoCloseable> toClose = new ArrayDeque<>();
    private final String space =
            "ids" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);

    /** The real server the store talks to. */
    protected abstract InetSocketAddress server();

    /** A store whose leases end by {@code clock}, talking to the server at {@code host:port} (maybe a proxy). */
    protected abstract NodeIdLeaseStore createStore(Clock clock, String host, int port);

    @AfterEach
    void closeAll() throws Exception {
        while (!toClose.isEmpty()) {
            toClose.pop().close();
        }
    }

    private <T extends AutoCloseable> T closeLater(T closeable) {
        toClose.push(closeable);
        return closeable;
    }

    private NodeIdLeaseStore store(Clock clock) {
        InetSocketAddress server = server();
        return closeLater(createStore(clock, server.getHostString(), server.getPort()));
    }

    private MessageIdGenerator generator(NodeIdLeaseStore store, Duration lease, Clock clock, MessageIdFormat format) {
        return closeLater(MessageIdGenerator.builder()
                .format(format)
                .nodeIdLease(store, space)
                .lease(lease)
                .clock(clock)
                .build());
    }

    @Test
    @Timeout(120)
    void threeLeasedGenerators_issuingConcurrently_neverCollide() throws Exception {
        NodeIdLeaseStore store = store(Clock.systemUTC());
        List<MessageIdGenerator> generators = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            generators.add(generator(store, Duration.ofSeconds(30), Clock.systemUTC(), MessageIdFormat.defaults()));
        }
        int perGenerator = 200_000;
        ExecutorService pool = Executors.newFixedThreadPool(3);
        CountDownLatch start = new CountDownLatch(1);
        List<Future<long[]>> issued = new ArrayList<>();
        for (MessageIdGenerator g : generators) {
            issued.add(pool.submit(() -> {
                start.await();
                long[] ids = new long[perGenerator];
                for (int i = 0; i < perGenerator; i++) {
                    ids[i] = g.nextLong();
                }
                return ids;
            }));
        }
        start.countDown();

        long[] all = new long[3 * perGenerator];
        for (int g = 0; g < 3; g++) {
            long[] ids = issued.get(g).get();
            for (int i = 1; i < ids.length; i++) {
                assertThat(ids[i]).as("generator %d, id %d", g, i).isGreaterThan(ids[i - 1]);
            }
            int nodeId = generators.get(g).nodeId();
            assertThat(MessageIdFormat.defaults().parse(ids[0]).nodeId()).isEqualTo(nodeId);
            assertThat(MessageIdFormat.defaults().parse(ids[perGenerator - 1]).nodeId())
                    .isEqualTo(nodeId);
            System.arraycopy(ids, 0, all, g * perGenerator, perGenerator);
        }
        pool.shutdown();
        Arrays.sort(all);
        for (int i = 1; i < all.length; i++) {
            assertThat(all[i]).as("id %d issued twice", all[i]).isNotEqualTo(all[i - 1]);
        }
        assertThat(generators).extracting(MessageIdGenerator::nodeId).containsExactlyInAnyOrder(0, 1, 2);
    }

    @Test
    void generatorBeyondTheNodeIds_cannotTakeALiveNodeId_andGetsTheFirstOneReleased() {
        MessageIdFormat fourNodeIds = MessageIdFormat.builder().nodeBits(2).build();
        NodeIdLeaseStore store = store(Clock.systemUTC());
        List<MessageIdGenerator> live = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            live.add(generator(store, LONG_LEASE, Clock.systemUTC(), fourNodeIds));
        }
        long lastOfReleased = live.get(1).nextLong();

        assertThat(live).extracting(MessageIdGenerator::nodeId).containsExactly(0, 1, 2, 3);
        assertThatThrownBy(() -> generator(store, LONG_LEASE, Clock.systemUTC(), fourNodeIds))
                .isInstanceOf(IdGenerationException.class)
                .hasMessageContaining("every node id 0 to 3 of id space '" + space + "'")
                .satisfies(e -> assertThat(((IdGenerationException) e).reason()).isEqualTo(Reason.NO_FREE_NODE_ID));

        live.get(1).close();
        MessageIdGenerator next = generator(store, LONG_LEASE, Clock.systemUTC(), fourNodeIds);

        assertThat(next.nodeId()).isEqualTo(1);
        assertThat(next.nextLong()).isGreaterThan(lastOfReleased);
    }

    @Test
    @Timeout(60)
    void storeUnreachable_renewalsFail_andTheGeneratorStopsWhenItsReservationEnds() {
        InetSocketAddress server = server();
        TcpProxy proxy = closeLater(TcpProxy.start(server.getHostString(), server.getPort()));
        MutableClock storeClock = MutableClock.atNow();
        MutableClock clock = MutableClock.atNow();
        NodeIdLeaseStore store = closeLater(createStore(storeClock, "127.0.0.1", proxy.port()));
        MessageIdGenerator generator = generator(store, SHORT_LEASE, clock, MessageIdFormat.defaults());
        generator.nextLong();

        // Past the first reservation: a background renewal through the proxy lets it issue again.
        clock.advance(Duration.ofSeconds(2));
        await("a renewal through the proxy").atMost(WAIT).until(() -> issues(generator));

        proxy.close();
        clock.advance(Duration.ofSeconds(2));

        await("a failed renewal")
                .atMost(WAIT)
                .untilAsserted(() -> assertThatThrownBy(generator::nextLong)
                        .isInstanceOf(IdGenerationException.class)
                        .hasMessageContaining("was not renewed in time")
                        .hasMessageContaining("last renewal:")
                        .satisfies(e -> assertThat(((IdGenerationException) e).reason())
                                .isEqualTo(Reason.NODE_ID_LEASE_EXPIRED)));
    }

    @Test
    @Timeout(60)
    void lapsedLeaseTakenByAnotherGenerator_renewalRefused_andTheLapsedOneNeverIssuesAgain() {
        Instant t0 = Instant.ofEpochMilli(System.currentTimeMillis());
        // The first generator's store clock stands still, so its renewals never push its lease past t0 + 1 s; the
        // second one's store clock reads t0 + 2 s, so it finds that lease ended.
        MutableClock lapsedClock = MutableClock.at(t0);
        MessageIdGenerator lapsed = generator(store(lapsedClock), SHORT_LEASE, lapsedClock, MessageIdFormat.defaults());
        long lastOfLapsed = lapsed.nextLong();

        MutableClock laterClock = MutableClock.at(t0.plusSeconds(2));
        NodeIdLeaseStore laterStore = store(laterClock);
        MessageIdGenerator taker = generator(laterStore, SHORT_LEASE, laterClock, MessageIdFormat.defaults());

        assertThat(taker.nodeId()).isEqualTo(lapsed.nodeId());
        assertThat(taker.nextLong()).isGreaterThan(lastOfLapsed);
        await("the lapsed generator's refused renewal")
                .atMost(WAIT)
                .untilAsserted(() -> assertThatThrownBy(lapsed::nextLong)
                        .hasMessageContaining("is held by another generator now")
                        .satisfies(e ->
                                assertThat(((IdGenerationException) e).reason()).isEqualTo(Reason.NODE_ID_LEASE_LOST)));

        lapsed.close();
        MessageIdGenerator third = generator(laterStore, SHORT_LEASE, laterClock, MessageIdFormat.defaults());
        assertThat(third.nodeId())
                .as("the lapsed one's close must not free the taker's node id")
                .isNotEqualTo(taker.nodeId());
    }

    @Test
    void nodeRestartingAfterACrash_withItsClockBehind_cannotRepeatAnId() {
        Instant t0 = Instant.ofEpochMilli(System.currentTimeMillis());
        MutableClock storeClock = MutableClock.at(t0);
        NodeIdLeaseStore store = store(storeClock);
        MutableClock crashedClock = MutableClock.at(t0);
        MessageIdGenerator crashed = generator(store, LONG_LEASE, crashedClock, MessageIdFormat.defaults());
        long lastOfCrashed = 0;
        for (int i = 0; i < 1000; i++) {
            lastOfCrashed = crashed.nextLong();
            crashedClock.advance(Duration.ofMillis(1));
        }
        // The node dies without releasing; its lease ends by the store's clock; it restarts with its clock behind.
        storeClock.advance(LONG_LEASE.plusSeconds(1));
        MutableClock restartClock = MutableClock.at(t0.minusSeconds(2));
        MessageIdGenerator behind = generator(store, LONG_LEASE, restartClock, MessageIdFormat.defaults());

        assertThat(behind.nodeId()).isEqualTo(crashed.nodeId());
        assertThatThrownBy(behind::nextLong)
                .satisfies(
                        e -> assertThat(((IdGenerationException) e).reason()).isEqualTo(Reason.CLOCK_MOVED_BACKWARDS));

        // It issues again once its clock has passed what the crashed node may have issued (its reservation).
        behind.close();
        restartClock.set(t0.plus(LONG_LEASE).plusSeconds(1));
        MessageIdGenerator caughtUp = generator(store, LONG_LEASE, restartClock, MessageIdFormat.defaults());

        assertThat(caughtUp.nodeId()).isEqualTo(crashed.nodeId());
        assertThat(caughtUp.nextLong()).isGreaterThan(lastOfCrashed);
    }

    private static boolean issues(MessageIdGenerator generator) {
        try {
            generator.nextLong();
            return true;
        } catch (IdGenerationException e) {
            return false;
        }
    }
}
