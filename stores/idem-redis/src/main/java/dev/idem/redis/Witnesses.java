package dev.idem.redis;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What one store has seen of each namespace it used: the epoch, and the highest fencing token it handed out under that
 * epoch (a counter found below it later means Redis lost writes, e.g. in a failover). Thread-safe.
 */
final class Witnesses {
    /** One namespace's witness; an empty epoch means the store has not used the namespace yet. */
    record Witness(String epoch, long token) {}

    private static final Witness NONE = new Witness("", 0);

    private final ConcurrentHashMap<String, Witness> byNamespace = new ConcurrentHashMap<>();

    Witness of(String namespace) {
        return byNamespace.getOrDefault(namespace, NONE);
    }

    /** Records that {@code namespace} answered under {@code epoch}, with {@code token} the highest token handed out. */
    void saw(String namespace, String epoch, long token) {
        Witness known = byNamespace.get(namespace);
        if (known != null && known.epoch().equals(epoch) && known.token() >= token) {
            return; // nothing new (a duplicate, or a token below one seen): no write to the shared map
        }
        byNamespace.merge(
                namespace,
                new Witness(epoch, token),
                (old, seen) -> old.epoch().equals(seen.epoch())
                        ? new Witness(old.epoch(), Math.max(old.token(), seen.token()))
                        : seen);
    }

    Set<String> namespaces() {
        return Set.copyOf(byNamespace.keySet());
    }
}
