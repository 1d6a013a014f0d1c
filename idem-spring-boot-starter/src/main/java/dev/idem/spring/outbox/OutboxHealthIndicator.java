package dev.idem.spring.outbox;

import dev.idem.outbox.OutboxRelay;
import dev.idem.outbox.OutboxStats;
import dev.idem.outbox.ParkedMessage;
import java.util.List;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;

/**
 * The outbox's backlog: UP with its details (unsent, parked, oldest unsent age, the first parked messages with their
 * reasons); DOWN when the outbox cannot be read. Parked messages need an operator, not a restart: they are reported
 * in the details (and in the {@code idem.outbox.parked} gauge), not as DOWN, which would take the instance out of
 * service for a message the broker refuses.
 */
public final class OutboxHealthIndicator implements HealthIndicator {
    private final OutboxRelay relay;

    public OutboxHealthIndicator(OutboxRelay relay) {
        this.relay = relay;
    }

    @Override
    public Health health() {
        try {
            OutboxStats stats = relay.stats();
            Health.Builder health = Health.up()
                    .withDetail("unsent", stats.unsent())
                    .withDetail("parked", stats.parked())
                    .withDetail("oldestUnsentAge", stats.oldestUnsentAge().toString());
            if (stats.parked() > 0) {
                List<String> parked = relay.parked(5).stream()
                        .map(OutboxHealthIndicator::describe)
                        .toList();
                health.withDetail("parkedMessages", parked)
                        .withDetail("action", "fix the cause, then OutboxRelay.unpark(messageId)");
            }
            return health.build();
        } catch (RuntimeException e) {
            return Health.down(e).build();
        }
    }

    private static String describe(ParkedMessage p) {
        return p.messageId() + " (key " + p.key() + ", to " + p.destination() + "): " + p.reason();
    }
}
