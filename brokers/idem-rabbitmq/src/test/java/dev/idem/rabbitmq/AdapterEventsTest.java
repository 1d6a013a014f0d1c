package dev.idem.rabbitmq;

import static dev.idem.rabbitmq.RabbitFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Connection;
import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyListener;
import dev.idem.Outcome;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The adapter tells its listener of every retry scheduled, dead letter and ack, with the attempt. */
class AdapterEventsTest {

    @Test
    void retryThenAck_andReject_areReportedWithSourceAttemptAndHashedKey() throws Exception {
        List<IdempotencyEvent> events = new CopyOnWriteArrayList<>();
        try (RabbitFixture.Queues queues = RabbitFixture.queues("events");
                Connection connection = RabbitFixture.connect()) {
            AtomicInteger calls = new AtomicInteger();
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .retryPolicy(RabbitFixture.FAST_RETRY)
                    .listener(events::add)
                    .handler((key, message) -> {
                        if (key.equals("bad-1")) {
                            return Outcome.rejected("amount is negative");
                        }
                        return calls.incrementAndGet() == 1
                                ? Outcome.failed("payment service down", null)
                                : Outcome.processed();
                    })
                    .build()
                    .start()) {
                queues.publish("pay-1", "x");
                await().atMost(WAIT).until(() -> events.size() == 2);
                queues.publish("bad-1", "x");
                await().atMost(WAIT).until(() -> events.size() == 3);
            }
        }
        assertThat(events)
                .extracting(IdempotencyEvent::type)
                .containsExactly(
                        IdempotencyEvent.Type.RETRY_SCHEDULED,
                        IdempotencyEvent.Type.COMMITTED,
                        IdempotencyEvent.Type.DEAD_LETTERED);
        assertThat(events).extracting(IdempotencyEvent::attempt).containsExactly(1, 2, 1);
        assertThat(events).extracting(IdempotencyEvent::source).containsOnly("rabbitmq");
        assertThat(events)
                .extracting(e -> e.outcome().type())
                .containsExactly(Outcome.Type.FAILED, Outcome.Type.PROCESSED, Outcome.Type.REJECTED);
        assertThat(events.get(0).keyLogId()).isEqualTo(events.get(1).keyLogId()).doesNotContain("pay-1");
        assertThat(events.get(2).message()).contains(".dlx").contains("amount is negative");
    }

    @Test
    void throwingListener_isIgnored_theMessageIsStillAcked() throws Exception {
        IdempotencyListener broken = event -> {
            throw new IllegalStateException("listener bug");
        };
        try (RabbitFixture.Queues queues = RabbitFixture.queues("brokenlistener");
                Connection connection = RabbitFixture.connect()) {
            AtomicInteger calls = new AtomicInteger();
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .listener(broken)
                    .handler((key, message) -> {
                        calls.incrementAndGet();
                        return Outcome.processed();
                    })
                    .build()
                    .start()) {
                queues.publish("pay-1", "x");
                await().atMost(WAIT).until(() -> calls.get() == 1 && queues.depth(queues.queue()) == 0);
                assertThat(consumer.isRunning()).isTrue();
            }
            assertThat(calls).hasValue(1);
        }
    }
}
