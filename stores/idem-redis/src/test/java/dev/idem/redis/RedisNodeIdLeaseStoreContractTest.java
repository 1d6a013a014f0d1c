package dev.idem.redis;

import dev.idem.id.spi.NodeIdLeaseStore;
import dev.idem.testkit.NodeIdLeaseStoreContract;
import dev.idem.testsupport.TestServers;
import java.time.Clock;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;

class RedisNodeIdLeaseStoreContractTest extends NodeIdLeaseStoreContract {
    private static final String PREFIX = TestServers.uniquePrefix("RedisNodeIdLeaseStoreContract");

    @Override
    protected NodeIdLeaseStore createStore(Clock clock) {
        return RedisNodeIdLeaseStore.builder(TestServers.redis().url())
                .prefix(PREFIX)
                .clock(clock)
                .build();
    }

    @Override
    protected NodeIdLeaseStore createUnavailableStore(Clock clock) {
        return RedisNodeIdLeaseStore.builder(RedisKeys.unreachableUrl())
                .clock(clock)
                .commandTimeout(Duration.ofMillis(300))
                .build();
    }

    @AfterAll
    static void deleteKeys() {
        RedisKeys.deleteAll(TestServers.redis().url(), PREFIX);
    }
}
