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

    /** Whether the store runs with {@code useServerClock(true)}. Default false. */
    boolean serverClock() {
        return false;
    }

    @Override
    protected boolean keepsItsOwnTime() {
        return serverClock();
    }

    @Override
    protected IdempotencyStore createStore(Clock clock) {
        RedisStore.Builder builder = RedisStore.builder(TestServers.redis().url())
                .prefix(PREFIX)
                .armingDelay(Duration.ZERO); // every test uses a new namespace; arming is RedisStoreMarkLossTest's
        return (serverClock() ? builder.useServerClock(true) : builder.clock(clock)).build();
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
