package dev.idem.spring.actuate;

import dev.idem.redis.RedisStore;
import java.util.Map;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;

/**
 * {@code /actuator/idem}: reads the namespaces whose marks were lost; {@code POST /actuator/idem/{namespace}}
 * re-arms one in the Redis store after an operator dealt with the loss (keys whose marks were lost count as new from
 * then on). Exposed like any endpoint ({@code management.endpoints.web.exposure.include=health,idem}); secure it.
 */
@Endpoint(id = "idem")
public final class IdemEndpoint {
    private final RedisStore store;
    private final MarksLostTracker marksLost;

    public IdemEndpoint(RedisStore store, MarksLostTracker marksLost) {
        this.store = store;
        this.marksLost = marksLost;
    }

    @ReadOperation
    public Map<String, Object> marksLost() {
        return Map.of("store", store.describe(), "marksLost", marksLost.lostNamespaces());
    }

    @WriteOperation
    public Map<String, Object> rearm(@Selector String namespace) {
        store.rearm(namespace);
        marksLost.rearmed(namespace);
        return Map.of("rearmed", namespace, "marksLost", marksLost.lostNamespaces());
    }
}
