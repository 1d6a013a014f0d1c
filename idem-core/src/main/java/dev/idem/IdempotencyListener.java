package dev.idem;

/**
 * The one observation point: told of every handling, every broker-side decision and every warning, as one {@link
 * IdempotencyEvent}. Registered once on each builder ({@code .listener(...)}): guards, inboxes, stores that raise
 * alerts, broker adapters.
 *
 * <p>Implementations must be thread-safe and quick. An exception thrown from a listener is logged and otherwise
 * ignored: it never changes an outcome.
 */
@FunctionalInterface
public interface IdempotencyListener {

    /** A listener that does nothing. */
    IdempotencyListener NONE = event -> {};

    void onEvent(IdempotencyEvent event);
}
