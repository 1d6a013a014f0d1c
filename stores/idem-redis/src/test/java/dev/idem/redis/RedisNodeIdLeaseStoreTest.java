package dev.idem.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.StoreUnavailableException;
import dev.idem.id.spi.NodeIdGrant;
import dev.idem.spi.UpdateResult;
import dev.idem.testkit.MutableClock;
import dev.idem.testsupport.PrivateServer;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** What the node-id lease contract does not cover, on a Redis server of the test's own: keys, scripts, restarts. */
class RedisNodeIdLeaseStoreTest {
    private static final Duration LEASE = Duration.ofSeconds(30);

    private final MutableClock clock = MutableClock.atNow();
    private PrivateServer redis;
    private RedisNodeIdLeaseStore store;

    @BeforeEach
    void start() {
        redis = PrivateServer.redis();
        store = RedisNodeIdLeaseStore.builder(redis.url())
                .prefix("ids")
                .clock(clock)
                .commandTimeout(Duration.ofMillis(500))
                .build();
    }

    @AfterEach
    void stop() {
        store.close();
        redis.close();
    }

    @Test
    void aSpace_isOneHashUnderItsHashTag_withNoTtl_soItsMarksOutliveEveryLease() {
        store.acquire("orders", "a", 3, LEASE, clock.instant().plusSeconds(27));
        clock.advance(Duration.ofDays(2));

        Long ttl = redis(c -> c.sync().pttl("{ids:orders}:node-ids"));
        String mark = redis(c -> c.sync().hget("{ids:orders}:node-ids", "h:0"));
        List<String> keys = redis(c -> c.sync().keys("*"));

        assertThat(ttl).isEqualTo(-1L);
        assertThat(mark)
                .isEqualTo(Long.toString(clock.instant()
                        .minus(Duration.ofDays(2))
                        .plusSeconds(27)
                        .toEpochMilli()));
        assertThat(keys).containsExactly("{ids:orders}:node-ids");
    }

    @Test
    void scriptCacheFlushed_callsResendTheirSource() {
        NodeIdGrant grant =
                store.acquire("orders", "a", 3, LEASE, clock.instant()).orElseThrow();
        redis(c -> c.sync().scriptFlush());

        assertThat(store.renew("orders", grant.nodeId(), "a", LEASE, clock.instant()))
                .isEqualTo(UpdateResult.APPLIED);
        redis(c -> c.sync().scriptFlush());
        assertThat(store.release("orders", grant.nodeId(), "a", clock.instant()))
                .isEqualTo(UpdateResult.APPLIED);
    }

    /** The documented loss: Redis without persistence forgets leases and marks; the holder's renewal says so. */
    @Test
    void redisRestartWithoutPersistence_renewalIsNotFound_andTheNodeIdIsGrantedAgainWithNoMark() {
        Instant reserved = clock.instant().plusSeconds(27);
        NodeIdGrant grant = store.acquire("orders", "a", 3, LEASE, reserved).orElseThrow();

        redis.restart();
        AtomicReference<UpdateResult> renewal = new AtomicReference<>();
        await("the store reconnected").atMost(Duration.ofSeconds(20)).until(() -> {
            try {
                renewal.set(store.renew("orders", grant.nodeId(), "a", LEASE, reserved));
                return true;
            } catch (StoreUnavailableException e) {
                return false;
            }
        });

        assertThat(renewal.get()).isEqualTo(UpdateResult.NOT_FOUND);
        NodeIdGrant after =
                store.acquire("orders", "b", 3, LEASE, clock.instant()).orElseThrow();
        assertThat(after.nodeId()).isEqualTo(grant.nodeId());
        assertThat(after.highWaterMark()).isEqualTo(Instant.EPOCH);
    }

    private <T> T redis(Function<StatefulRedisConnection<String, String>, T> command) {
        RedisClient client = RedisClient.create(redis.url());
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            return command.apply(c);
        } finally {
            client.shutdown();
        }
    }
}
