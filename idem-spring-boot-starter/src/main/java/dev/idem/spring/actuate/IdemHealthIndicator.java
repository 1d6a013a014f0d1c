package dev.idem.spring.actuate;

import dev.idem.IdempotencyKey;
import dev.idem.StoreUnavailableException;
import dev.idem.spi.IdempotencyStore;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;

/**
 * DOWN when a store Idem relies on fails closed: it cannot be reached (a lookup of a probe key fails), or it lost its
 * marks (Redis restarted without persistence: {@link MarksLostTracker}) and waits to be re-armed. While DOWN, guarded
 * messages are retried, not processed.
 */
public final class IdemHealthIndicator implements HealthIndicator {
    private static final IdempotencyKey PROBE = IdempotencyKey.of("idem-health", "probe");

    private final List<IdempotencyStore> stores;
    private final MarksLostTracker marksLost;

    public IdemHealthIndicator(List<IdempotencyStore> stores, MarksLostTracker marksLost) {
        this.stores = List.copyOf(stores);
        this.marksLost = marksLost;
    }

    @Override
    public Health health() {
        boolean up = true;
        Map<String, String> storeStates = new LinkedHashMap<>();
        for (IdempotencyStore store : stores) {
            try {
                store.lookup(PROBE);
                storeStates.put(store.describe(), "reachable");
            } catch (StoreUnavailableException e) {
                up = false;
                storeStates.put(store.describe(), e.getMessage());
            }
        }
        Map<String, String> lost = marksLost.lostNamespaces();
        Health.Builder health = up && lost.isEmpty() ? Health.up() : Health.down();
        health.withDetail("stores", storeStates);
        if (!lost.isEmpty()) {
            health.withDetail("marksLost", lost)
                    .withDetail(
                            "action", "check what the loss affected, then POST /actuator/idem/{namespace} to re-arm");
        }
        return health.build();
    }
}
