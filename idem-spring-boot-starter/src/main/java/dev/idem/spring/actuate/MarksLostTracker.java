package dev.idem.spring.actuate;

import dev.idem.IdempotencyListener;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Remembers the namespaces whose store reported lost marks ({@code MARKS_LOST}), until they are re-armed through the
 * {@link IdemEndpoint}. The store fails those namespaces closed meanwhile; the health indicator reports them DOWN.
 */
public final class MarksLostTracker implements IdempotencyListener {
    private final Map<String, String> lost = new ConcurrentHashMap<>();

    @Override
    public void onWarning(Warning warning) {
        if (warning.kind() == Warning.Kind.MARKS_LOST) {
            lost.put(warning.namespace(), warning.message());
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
