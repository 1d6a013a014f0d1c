package dev.idem.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Guard;
import dev.idem.IdempotencyKey;
import dev.idem.Outcome;
import dev.idem.spi.UpdateResult;
import dev.idem.testsupport.ReadmeSnippets;
import dev.idem.testsupport.TestServers;
import java.nio.file.Path;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class ReadmeRedisExampleTest {
    private static final Path SOURCE = Path.of("src/test/java/dev/idem/redis/ReadmeRedisExampleTest.java");

    record Message(String idempotencyKey, long amount) {}

    private final AtomicInteger charges = new AtomicInteger();

    @Test
    void readmeRedisExample_compilesRuns_andIsShownVerbatim() {
        String redisUri = TestServers.redis().url();
        RecordingListener alerts = new RecordingListener();
        Message message = new Message("readme-" + UUID.randomUUID(), 25);

        // readme:redis begin
        RedisStore store = RedisStore.builder(redisUri) // e.g. redis://127.0.0.1:6379, rediss://user:pw@host:6380
                .prefix("idem")
                .listener(alerts) // MARKS_LOST arrives here
                .build();
        Guard guard = Guard.builder(store).namespace("payments").build();

        Outcome outcome = guard.run(message.idempotencyKey(), () -> chargeCustomer(message));
        // readme:redis end
        try {
            Outcome again = guard.run(message.idempotencyKey(), () -> chargeCustomer(message));

            // readme:redis-rearm begin
            // After a MARKS_LOST alert, once you have dealt with the lost window (see Caveats):
            store.rearm(); // from any store of the prefix, e.g. an admin endpoint
            // readme:redis-rearm end

            assertThat(outcome.type()).isEqualTo(Outcome.Type.PROCESSED);
            assertThat(again.type()).isEqualTo(Outcome.Type.DUPLICATE);
            assertThat(charges).hasValue(1);
            assertThat(alerts.warnings).isEmpty();
            assertThat(store.release(IdempotencyKey.of("payments", message.idempotencyKey()), "nobody"))
                    .as("the completion stays for its retention")
                    .isEqualTo(UpdateResult.NOT_OWNER);
        } finally {
            guard.close();
            store.close();
            RedisKeys.delete(redisUri, "{idem:payments}:r:" + message.idempotencyKey());
        }
        ReadmeSnippets.assertShown(SOURCE, "redis");
        ReadmeSnippets.assertShown(SOURCE, "redis-rearm");
    }

    private void chargeCustomer(Message message) {
        charges.incrementAndGet();
    }
}
