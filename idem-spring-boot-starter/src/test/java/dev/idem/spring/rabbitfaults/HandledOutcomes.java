package dev.idem.spring.rabbitfaults;

import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyListener;
import dev.idem.Outcome;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** The outcome types the guards handled, per namespace. */
public class HandledOutcomes implements IdempotencyListener {
    private final List<IdempotencyEvent> handled = new CopyOnWriteArrayList<>();

    @Override
    public void onEvent(IdempotencyEvent event) {
        if (event.type() == IdempotencyEvent.Type.HANDLED) {
            handled.add(event);
        }
    }

    public long count(String namespace, Outcome.Type type) {
        return handled.stream()
                .filter(e -> e.namespace().equals(namespace)
                        && e.outcome() != null
                        && e.outcome().type() == type)
                .count();
    }
}
