package dev.idem.redis;

import dev.idem.id.spi.NodeIdLeaseStore;
import dev.idem.testkit.LeasedMessageIdContract;
import dev.idem.testsupport.TestServers;
import java.net.InetSocketAddress;
import java.time.Clock;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;

class RedisLeasedMessageIdTest extends LeasedMessageIdContract {
    private static final String PREFIX = TestServers.uniquePrefix("RedisLeasedMessageId");

    @Override
    protected InetSocketAddress server() {
        return InetSocketAddress.createUnresolved(
                TestServers.redis().host(), TestServers.redis().port());
    }

    @Override
    protected NodeIdLeaseStore createStore(Clock clock, String host, int port) {
        return RedisNodeIdLeaseStore.builder("redis://" + host + ":" + port)
                .prefix(PREFIX)
                .clock(clock)
                .commandTimeout(Duration.ofMillis(500))
                .build();
    }

    @AfterAll
    static void deleteKeys() {
        RedisKeys.deleteAll(TestServers.redis().url(), PREFIX);
    }
}
