package dev.idem.testsupport;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Guard;
import dev.idem.InMemoryStore;
import dev.idem.Outcome;
import dev.idem.spi.IdempotencyStore;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class ReadmeGuardExampleTest {
    private static final Path SOURCE = Path.of("src/test/java/dev/idem/testsupport/ReadmeGuardExampleTest.java");

    record Message(String idempotencyKey, long amount) {}

    private final List<String> log = new ArrayList<>();

    @Test
    void readmeGuardExample_compilesRuns_andIsShownVerbatim() {
        // readme:guard-setup begin
        IdempotencyStore store = InMemoryStore.create(); // or a JDBC / Redis store
        Guard guard = Guard.builder(store).namespace("payments").build();
        // readme:guard-setup end
        Message message = new Message("10086:PAY", 25);

        handle(guard, message);
        handle(guard, message);
        handle(guard, new Message(" ", 25));

        assertThat(log).containsExactly("charged 25", "acked", "acked", "dead-lettered: idempotency key");
        ReadmeSnippets.assertShown(SOURCE, "guard-setup");
        ReadmeSnippets.assertShown(SOURCE, "guard-handle");
    }

    private void handle(Guard guard, Message message) {
        // readme:guard-handle begin
        Outcome outcome = guard.run(message.idempotencyKey(), () -> chargeCustomer(message));
        switch (outcome.action()) {
            case ACK -> ack(message); // PROCESSED or DUPLICATE
            case RETRY -> retryLater(message, outcome.retryAfter()); // IN_PROGRESS, OUT_OF_ORDER, FAILED
            case DEAD_LETTER -> deadLetter(message, outcome.reason()); // REJECTED
        }
        // readme:guard-handle end
    }

    private void chargeCustomer(Message message) {
        log.add("charged " + message.amount());
    }

    private void ack(Message message) {
        log.add("acked");
    }

    private void retryLater(Message message, Optional<Duration> after) {
        log.add("retry");
    }

    private void deadLetter(Message message, String reason) {
        log.add("dead-lettered: " + reason.substring(0, reason.indexOf(" for")));
    }
}
