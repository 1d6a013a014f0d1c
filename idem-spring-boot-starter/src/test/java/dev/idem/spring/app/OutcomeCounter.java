package dev.idem.spring.app;

import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyListener;
import dev.idem.Outcome;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.stereotype.Component;

/** The application's own listener: counts handlings per namespace and outcome (the starter hands it every event). */
@Component
public class OutcomeCounter implements IdempotencyListener {
    private final Map<String, AtomicInteger> counts = new ConcurrentHashMap<>();

    @Override
    public void onEvent(IdempotencyEvent event) {
        Outcome outcome = event.outcome();
        if (event.type() == IdempotencyEvent.Type.HANDLED && outcome != null) {
            counts.computeIfAbsent(event.namespace() + "/" + outcome.type(), k -> new AtomicInteger())
                    .incrementAndGet();
        }
    }

    public int count(String namespace, Outcome.Type type) {
        AtomicInteger n = counts.get(namespace + "/" + type);
        return n == null ? 0 : n.get();
    }
}
