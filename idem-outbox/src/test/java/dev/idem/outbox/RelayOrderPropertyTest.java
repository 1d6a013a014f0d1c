package dev.idem.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.RetryPolicy;
import dev.idem.outbox.RecordingPublisher.Answer;
import dev.idem.testkit.MutableClock;
import dev.idem.testsupport.TestDatabase;
import dev.idem.testsupport.TestServers;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;

/**
 * Random sequences of sends, relay cycles on two relays, broker answers (acknowledge, refuse, time out, acknowledge then
 * crash the relay) and clock steps, on H2; then the broker heals, parked messages are unparked and the relays drain.
 * After every sequence: each sent message was published, each key's messages were first published in the order they
 * were sent, no key was ever published by two relays at once, and nothing is left unsent.
 */
class RelayOrderPropertyTest {
    private static final Duration LEASE = Duration.ofSeconds(10);
    private static TestDatabase db;

    @BeforeContainer
    static void open() {
        db = TestDatabase.h2("RelayOrderPropertyTest");
    }

    @AfterContainer
    static void close() {
        db.close();
    }

    sealed interface Step permits Send, Cycle, BrokerAnswers, Advance {}

    record Send(int key) implements Step {}

    record Cycle(int relay) implements Step {}

    record BrokerAnswers(Answer answer) implements Step {}

    record Advance(int seconds) implements Step {}

    @Provide
    Arbitrary<List<Step>> sequences() {
        Arbitrary<Step> step = Arbitraries.frequencyOf(
                net.jqwik.api.Tuple.of(5, Arbitraries.integers().between(0, 3).map(Send::new)),
                net.jqwik.api.Tuple.of(5, Arbitraries.integers().between(0, 1).map(Cycle::new)),
                net.jqwik.api.Tuple.of(2, Arbitraries.of(Answer.class).map(BrokerAnswers::new)),
                net.jqwik.api.Tuple.of(2, Arbitraries.integers().between(1, 15).map(Advance::new)));
        return step.list().ofMinSize(5).ofMaxSize(40);
    }

    @Property(tries = 200)
    void randomFailuresAndCrashes_keepEachKeysOrder_andPublishEverything(@ForAll("sequences") List<Step> steps)
            throws Exception {
        String table = TestServers.uniquePrefix("prop");
        OutboxSchema.create(db.dataSource(), table);
        RelayTime time = new RelayTime();
        MutableClock clock = time.clock;
        Outbox outbox = Outbox.builder().table(table).clock(clock).build();
        RecordingPublisher broker = new RecordingPublisher();
        Answer[] answer = {Answer.ACK};
        broker.answer(r -> answer[0]);
        int[] generation = {0};
        OutboxRelay[] relays = {relay(table, time, broker, 0, 0), relay(table, time, broker, 1, 0)};
        Map<String, List<String>> sentByKey = new LinkedHashMap<>();
        int sent = 0;
        for (Step step : steps) {
            if (step instanceof Send s) {
                try (Connection c = db.connection()) {
                    c.setAutoCommit(false);
                    String id = outbox.send(
                            c, OutboxMessage.to("t").key("k" + s.key()).payload("m" + sent++));
                    c.commit();
                    sentByKey
                            .computeIfAbsent("k" + s.key(), k -> new ArrayList<>())
                            .add(id);
                }
            } else if (step instanceof Cycle cy) {
                try {
                    relays[cy.relay()].relayOnce();
                } catch (RecordingPublisher.Crash crash) {
                    // the process died: a new relay process takes its place; the dead one's leases run out
                    relays[cy.relay()] = relay(table, time, broker, cy.relay(), ++generation[0]);
                }
            } else if (step instanceof BrokerAnswers b) {
                answer[0] = b.answer();
            } else if (step instanceof Advance a) {
                time.passes(db.dataSource(), table, Duration.ofSeconds(a.seconds()));
            }
        }
        answer[0] = Answer.ACK;
        time.passes(db.dataSource(), table, LEASE.multipliedBy(2));
        for (int round = 0; round < 50 && relays[0].stats().unsent() > 0; round++) {
            relays[0].parked(100).forEach(p -> relays[0].unpark(p.messageId()));
            relays[0].relayOnce();
            relays[1].relayOnce();
            time.passes(
                    db.dataSource(),
                    table,
                    Duration.ofMinutes(6)); // past any backoff, and past leases of relays that stopped cycling
        }

        assertThat(relays[0].stats().unsent()).as("unsent after the drain").isZero();
        assertThat(broker.violations()).isEmpty();
        Map<String, List<String>> firstPublished = new LinkedHashMap<>();
        for (var p : broker.published()) {
            List<String> ids = firstPublished.computeIfAbsent(p.record().key(), k -> new ArrayList<>());
            if (!ids.contains(p.record().messageId())) {
                ids.add(p.record().messageId());
            }
        }
        assertThat(firstPublished)
                .as("each key's messages, first published in the order sent")
                .isEqualTo(sentByKey);
        assertThat(new LinkedHashSet<>(broker.ids()))
                .hasSize(sentByKey.values().stream().mapToInt(List::size).sum());
    }

    private static OutboxRelay relay(String table, RelayTime time, RecordingPublisher broker, int relay, int gen) {
        return OutboxRelay.builder(db.dataSource(), broker.as("r" + relay))
                .table(table)
                .shards(4)
                .lease(LEASE)
                .publishTimeout(Duration.ofSeconds(2))
                .batchSize(3)
                .retryPolicy(RetryPolicy.builder()
                        .initialDelay(Duration.ofSeconds(1))
                        .maxDelay(Duration.ofSeconds(5))
                        .maxAttempts(2)
                        .jitter(0)
                        .build())
                .relayId("r" + relay + "-" + gen)
                .clock(time.clock)
                .nanoTime(time::nanoTime)
                .build();
    }
}
