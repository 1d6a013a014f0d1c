package dev.idem.redis;

import dev.idem.spi.IdempotencyStore;
import dev.idem.testkit.IdempotencyStoreContract;
import dev.idem.testsupport.TestServers;
import java.time.Clock;
import java.time.Duration;
import net.jqwik.api.lifecycle.AfterContainer;
import org.junit.jupiter.api.AfterAll;

class RedisStoreContractTest extends IdempotencyStoreContract {
    private static final String PREFIX = TestServers.uniquePrefix("RedisStoreContract");

    @Override
    protected IdempotencyStore createStore(Clock clock) {
        return RedisStore.builder(TestServers.redis().url())
                .prefix(PREFIX)
                .clock(clock)
                .armingDelay(Duration.ZERO) // every test uses a new namespace; arming is RedisStoreMarkLossTest's
                .build();
    }

    @Override
    protected IdempotencyStore createUnavailableStore(Clock clock) {
        return RedisStore.builder(RedisKeys.unreachableUrl())
                .clock(clock)
                .commandTimeout(Duration.ofMillis(300))
                .build();
    }

    /** Jupiter runs the tests, jqwik the property: each engine cleans up after its own. */
    @AfterAll
    @AfterContainer
    static void deleteKeys() {
        RedisKeys.deleteAll(TestServers.redis().url(), PREFIX);
    }
}
