package dev.idem.testkit;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

/**
 * The contract's fixture on the {@link InMemoryBroker}: a fresh broker per destination, publishing, the dead-letter
 * place and its replay. A subclass says how its consumer settles what the handler answered.
 */
abstract class InMemoryBrokerAdapter extends AdapterContract {
    protected InMemoryBroker broker = new InMemoryBroker();

    @Override
    protected void createDestination(String name) {
        broker = new InMemoryBroker();
    }

    @Override
    protected void publish(TestMessage message) {
        broker.publish(message);
    }

    @Override
    protected List<DeadLetter> deadLetters() {
        return broker.deadLetters.stream().map(InMemoryBroker.Dead::letter).toList();
    }

    @Override
    protected void replayDeadLetters() {
        broker.deadLetters.forEach(dead -> broker.publish(dead.message()));
    }

    @Override
    protected Map<String, byte[]> hostileHeaders() {
        return Map.of("idem-attempts", "999".getBytes(StandardCharsets.UTF_8));
    }
}
