package dev.idem.spring.outbox;

import dev.idem.outbox.OutboxRelay;
import org.springframework.context.SmartLifecycle;

/**
 * Starts the relay when the context has started (after the listeners, so that their first messages go out at once)
 * and closes it, handing its shards to the other instances, when the context stops.
 */
public final class OutboxRelayLifecycle implements SmartLifecycle {
    private final OutboxRelay relay;
    private volatile boolean running;

    public OutboxRelayLifecycle(OutboxRelay relay) {
        this.relay = relay;
    }

    @Override
    public void start() {
        relay.start();
        running = true;
    }

    @Override
    public void stop() {
        relay.close();
        running = false;
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    public OutboxRelay relay() {
        return relay;
    }
}
