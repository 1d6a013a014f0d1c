package dev.idem.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.id.MessageIdGenerator;
import dev.idem.id.spi.NodeIdLeaseStore;
import dev.idem.testsupport.ReadmeSnippets;
import dev.idem.testsupport.TestServers;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class ReadmeNodeIdLeaseExampleTest {
    private static final Path SOURCE = Path.of("src/test/java/dev/idem/redis/ReadmeNodeIdLeaseExampleTest.java");

    @Test
    void readmeRedisNodeIdLeaseExample_compilesRuns_andIsShownVerbatim() {
        String redisUri = TestServers.redis().url();
        String space = TestServers.uniquePrefix("order-service");

        // readme:node-id-lease-redis begin
        NodeIdLeaseStore leases = RedisNodeIdLeaseStore.builder(redisUri) // idem-redis, e.g. redis://127.0.0.1:6379
                .prefix("idem") // one hash per id space: {idem:<space>}:node-ids
                .build();
        // readme:node-id-lease-redis end
        try (leases;
                MessageIdGenerator ids = MessageIdGenerator.builder()
                        .prefix("ORDER")
                        .nodeIdLease(leases, space)
                        .build()) {
            assertThat(ids.nodeId()).isZero();
            assertThat(ids.nextString()).startsWith("ORDER_");
        } finally {
            RedisKeys.delete(redisUri, "{idem:" + space + "}:node-ids");
        }
        ReadmeSnippets.assertShown(SOURCE, "node-id-lease-redis");
    }
}
