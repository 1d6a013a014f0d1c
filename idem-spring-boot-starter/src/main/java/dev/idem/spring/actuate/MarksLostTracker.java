package dev.idem.spring.actuate;

import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyListener;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Remembers the namespaces whose store reported lost marks ({@code MARKS_LOST}), until they are re-armed: through
 * the {@link IdemEndpoint}, or elsewhere (another instance, the store's mark-loss policy), which shows as a lease
 * claim in that namespace answered again. The store fails those namespaces closed meanwhile; the health indicator
 * reports them DOWN.
 */
public final class MarksLostTracker implements IdempotencyListener {
    private final Map<String, String> lost = new ConcurrentHashMap<>();

    @Override
    public void onEvent(IdempotencyEvent event) {
        if (event.type() == IdempotencyEvent.Type.MARKS_LOST) {
            lost.put(event.namespace(), event.message());
        } else if (event.type() == IdempotencyEvent.Type.HANDLED
                && event.guardKind() == IdempotencyEvent.GuardKind.LEASE
                && event.outcome() != null
                && event.outcome().isFinal()) {
            lost.remove(event.namespace());
        }
    }

    /** The namespaces with lost marks and what the store said, sorted by namespace. */
    public Map<String, String> lostNamespaces() {
        return new TreeMap<>(lost);
    }

    void rearmed(String namespace) {
        lost.remove(namespace);
    }
}
