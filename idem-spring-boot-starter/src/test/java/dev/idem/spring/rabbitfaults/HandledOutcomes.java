package dev.idem.spring.rabbitfaults;

import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyListener;
import dev.idem.Outcome;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** The outcome types the guards handled, per namespace, and the retries and dead letters the integrations reported. */
public class HandledOutcomes implements IdempotencyListener {
    private final List<IdempotencyEvent> events = new CopyOnWriteArrayList<>();

    @Override
    public void onEvent(IdempotencyEvent event) {
        events.add(event);
    }

    public long count(String namespace, Outcome.Type type) {
        return count(IdempotencyEvent.Type.HANDLED, namespace, type);
    }

    /** Events of {@code eventType} in {@code namespace} whose outcome is of {@code type}. */
    public long count(IdempotencyEvent.Type eventType, String namespace, Outcome.Type type) {
        return events(eventType, namespace, type).size();
    }

    /** Those events, each with its outcome's reason and cause, for an assertion's description. */
    public List<String> described(IdempotencyEvent.Type eventType, String namespace, Outcome.Type type) {
        return events(eventType, namespace, type).stream()
                .map(e -> e + " / " + e.outcome()
                        + e.outcome().cause().map(c -> " / cause " + c).orElse(""))
                .toList();
    }

    private List<IdempotencyEvent> events(IdempotencyEvent.Type eventType, String namespace, Outcome.Type type) {
        return events.stream()
                .filter(e -> e.type() == eventType
                        && e.namespace().equals(namespace)
                        && e.outcome() != null
                        && e.outcome().type() == type)
                .toList();
    }
}
