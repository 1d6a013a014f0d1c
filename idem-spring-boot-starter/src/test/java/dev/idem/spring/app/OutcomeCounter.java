package dev.idem.spring.app;

import dev.idem.IdempotencyListener;
import dev.idem.Outcome;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.stereotype.Component;

/** The application's own listener: counts outcomes per namespace and type (the starter hands it every event). */
@Component
public class OutcomeCounter implements IdempotencyListener {
    private final Map<String, AtomicInteger> counts = new ConcurrentHashMap<>();

    @Override
    public void onOutcome(String namespace, String keyLogId, Outcome outcome, Duration elapsed) {
        counts.computeIfAbsent(namespace + "/" + outcome.type(), k -> new AtomicInteger()).incrementAndGet();
    }

    public int count(String namespace, Outcome.Type type) {
        AtomicInteger n = counts.get(namespace + "/" + type);
        return n == null ? 0 : n.get();
    }
}
