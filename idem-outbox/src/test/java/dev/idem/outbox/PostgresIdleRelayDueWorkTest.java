package dev.idem.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.RetryPolicy;
import dev.idem.testsupport.TestDatabase;
import dev.idem.testsupport.TestServers;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * An idle relay that a commit no longer wakes still looks when work it knows of comes due. Every relay here polls once
 * a minute and renews its leases once a minute (a 4-minute lease), and no commit follows the one under test: each
 * message must be published well within that.
 */
class PostgresIdleRelayDueWorkTest {
    private static final Duration WELL_WITHIN_THE_POLL = Duration.ofSeconds(12);
    private static TestDatabase db;

    @BeforeAll
    static void database() {
        db = TestDatabase.postgres("PostgresIdleRelayDueWorkTest");
    }

    @AfterAll
    static void close() {
        db.close();
    }

    private static String table(String name) {
        String table = TestServers.uniquePrefix(name);
        OutboxSchema.create(db.dataSource(), table);
        return table;
    }

    private static OutboxRelay relay(String table, RecordingPublisher publisher, RetryPolicy retryPolicy) {
        return OutboxRelay.builder(db.dataSource(), publisher)
                .table(table)
                .pollInterval(Duration.ofMinutes(1))
                .lease(Duration.ofMinutes(4))
                .publishTimeout(Duration.ofSeconds(2))
                .retryPolicy(retryPolicy)
                .build();
    }

    private static String send(String table) throws SQLException {
        try (Connection c = db.connection()) {
            c.setAutoCommit(false);
            String id = Outbox.builder()
                    .table(table)
                    .build()
                    .send(c, OutboxMessage.to("payments").key("order-1").payload("paid"));
            c.commit();
            return id;
        }
    }

    @Test
    void aMessageBackedOffAfterAFailedPublish_isPublishedAgainWhenItsBackoffEnds_notAtThePoll() throws Exception {
        String table = table("retry");
        RecordingPublisher broker = new RecordingPublisher();
        AtomicInteger answers = new AtomicInteger();
        broker.answer(r ->
                answers.getAndIncrement() == 0 ? RecordingPublisher.Answer.TIMEOUT : RecordingPublisher.Answer.ACK);
        RetryPolicy oneSecond = RetryPolicy.builder()
                .initialDelay(Duration.ofSeconds(1))
                .maxDelay(Duration.ofSeconds(1))
                .jitter(0)
                .build();
        OutboxRelay relay = relay(table, broker, oneSecond);
        try (relay) {
            relay.start();
            String id = send(table);
            await().atMost(WELL_WITHIN_THE_POLL).until(() -> broker.ids().contains(id));
            assertThat(answers).hasValue(2);
        }
    }

    /** An operator unparks through an OutboxRelay of its own (an admin endpoint, another process) that never runs. */
    @Test
    void anUnparkedMessage_wakesTheIdleRelay_notAtThePoll() throws Exception {
        String table = table("unpark");
        RecordingPublisher broker = new RecordingPublisher();
        broker.answer(r -> RecordingPublisher.Answer.REFUSE);
        RetryPolicy parkAtOnce = RetryPolicy.builder().maxAttempts(1).jitter(0).build();
        try (OutboxRelay relay = relay(table, broker, parkAtOnce).start();
                OutboxRelay admin = relay(table, new RecordingPublisher(), parkAtOnce)) {
            String id = send(table);
            await().atMost(WELL_WITHIN_THE_POLL).until(() -> relay.stats().parked() == 1);
            Thread.sleep(300); // the relay looked again and sleeps for its poll
            broker.answer(r -> RecordingPublisher.Answer.ACK);
            assertThat(admin.unpark(id)).isTrue();
            await().atMost(WELL_WITHIN_THE_POLL).until(() -> broker.ids().contains(id));
        }
    }
}
