package dev.idem.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.idem.Delivery;
import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import dev.idem.jdbc.JdbcInbox;
import dev.idem.outbox.RecordingPublisher.Answer;
import dev.idem.testkit.MutableClock;
import dev.idem.testsupport.TestDatabase;
import dev.idem.testsupport.TestServers;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Savepoint;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * The outbox's contract on one database: what {@link Outbox#send} commits, what {@link OutboxRelay} publishes, in which
 * order, after which crash, what it parks and what it purges. A subclass names the database. The broker is the
 * {@link RecordingPublisher} at the publisher SPI; the publishers themselves are proven against real brokers elsewhere.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class OutboxContract {
    private static final Duration LEASE = Duration.ofSeconds(10);

    private final TestDatabase db;
    private String table = "";
    private Outbox outbox = Outbox.builder().build();
    private final RelayTime time = new RelayTime();
    private final MutableClock clock = time.clock;
    private final List<OutboxRelay> relays = new ArrayList<>();

    OutboxContract(TestDatabase db) {
        this.db = db;
    }

    @AfterAll
    void closeDatabase() {
        relays.forEach(OutboxRelay::close);
        db.close();
    }

    @BeforeEach
    void freshTable() {
        table = TestServers.uniquePrefix("ob").toLowerCase(java.util.Locale.ROOT);
        if (table.length() > 40) {
            table = table.substring(0, 40);
        }
        OutboxSchema.create(db.dataSource(), table);
        outbox = Outbox.builder().table(table).clock(clock).build();
    }

    private Outbox outbox() {
        return outbox;
    }

    private OutboxRelay.Builder relay(RecordingPublisher publisher) {
        return OutboxRelay.builder(db.dataSource(), publisher)
                .table(table)
                .shards(4)
                .lease(LEASE)
                .publishTimeout(Duration.ofSeconds(2))
                .clock(clock)
                .nanoTime(time::nanoTime);
    }

    private void passes(Duration time) throws Exception {
        this.time.passes(db.dataSource(), table, time);
    }

    private long shardsOwnedBy(String relayId) throws Exception {
        try (Connection c = db.connection();
                Statement s = c.createStatement();
                ResultSet rs =
                        s.executeQuery("SELECT COUNT(*) FROM " + table + "_shards WHERE owner = '" + relayId + "'")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private OutboxRelay started(OutboxRelay relay) {
        relays.add(relay);
        return relay;
    }

    /** Sends {@code messages} in one committed transaction of the test's own; returns their ids. */
    private List<String> commit(OutboxMessage... messages) throws Exception {
        List<String> ids = new ArrayList<>();
        try (Connection c = db.connection()) {
            c.setAutoCommit(false);
            for (OutboxMessage m : messages) {
                ids.add(outbox().send(c, m));
            }
            c.commit();
        }
        return ids;
    }

    private static OutboxMessage message(String key, String body) {
        return OutboxMessage.to("payments")
                .key(key)
                .header("type", "PaymentCompleted")
                .payload(body);
    }

    private long rows() throws Exception {
        try (Connection c = db.connection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM " + table)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    @Test
    void committedMessage_isPublished_withTheIdSendReturned_itsHeadersAndPayload() throws Exception {
        List<String> ids = commit(message("order-1", "paid 10"));
        RecordingPublisher broker = new RecordingPublisher();

        assertThat(started(relay(broker).build()).relayOnce()).isEqualTo(1);

        assertThat(broker.ids()).isEqualTo(ids);
        var record = broker.published().get(0).record();
        assertThat(record.key()).isEqualTo("order-1");
        assertThat(record.destination()).isEqualTo("payments");
        assertThat(record.headers()).containsEntry("type", "PaymentCompleted");
        assertThat(new String(record.payload(), java.nio.charset.StandardCharsets.UTF_8))
                .isEqualTo("paid 10");
        assertThat(relays.get(0).relayOnce())
                .as("marked sent: not published again")
                .isZero();
    }

    @Test
    void aFullBatch_isMarkedSentWithTheNextFetch_andNeverPublishedAgain() throws Exception {
        List<String> ids =
                commit(message("a", "1"), message("b", "2"), message("c", "3"), message("d", "4"), message("e", "5"));
        RecordingPublisher broker = new RecordingPublisher();
        OutboxRelay relay = started(relay(broker).batchSize(2).build());

        assertThat(relay.relayOnce()).isEqualTo(2);
        assertThat(relay.stats().unsent())
                .as("a full batch's mark waits for the next fetch")
                .isEqualTo(5);
        assertThat(relay.relayOnce()).isEqualTo(2);
        assertThat(relay.stats().unsent()).as("marked with that fetch").isEqualTo(3);
        assertThat(relay.relayOnce()).isEqualTo(1);
        assertThat(relay.stats().unsent())
                .as("a batch that is not full is marked at once")
                .isZero();
        assertThat(relay.relayOnce()).isZero();

        assertThat(broker.ids()).containsExactlyInAnyOrderElementsOf(ids);
    }

    /**
     * A service starting ({@link OutboxSchema#create}) while another's business transaction that sent a message is
     * open: PostgreSQL's {@code CREATE INDEX IF NOT EXISTS} waited for that transaction although the indexes existed,
     * and every send after it queued behind the waiting DDL. Creating tables that exist waits for nobody.
     */
    @Test
    @Timeout(60)
    void creatingTheTablesThatExist_whileABusinessTransactionSent_waitsForNobody() throws Exception {
        ExecutorService starter = Executors.newSingleThreadExecutor();
        try (Connection business = db.connection()) {
            business.setAutoCommit(false);
            outbox().send(business, message("order-20", "sent in an open transaction"));

            starter.submit(() -> OutboxSchema.create(db.dataSource(), table)).get(20, TimeUnit.SECONDS);
            try (Connection other = db.connection()) {
                other.setAutoCommit(false);
                outbox().send(other, message("order-21", "sent meanwhile"));
                other.commit();
            }
            business.commit();
        } finally {
            starter.shutdownNow();
        }

        assertThat(rows()).isEqualTo(2);
    }

    @Test
    void rolledBackTransaction_leavesNoMessage() throws Exception {
        try (Connection c = db.connection()) {
            c.setAutoCommit(false);
            outbox().send(c, message("order-2", "paid 20"));
            c.rollback();
        }
        RecordingPublisher broker = new RecordingPublisher();

        assertThat(started(relay(broker).build()).relayOnce()).isZero();
        assertThat(broker.published()).isEmpty();
        assertThat(rows()).isZero();
    }

    @Test
    void inboxHandler_sendsWithItsMark_andAHandlerThatFails_sendsNothing() throws Exception {
        JdbcInbox inbox = JdbcInbox.builder(db.dataSource())
                .namespace(table)
                .table(table + "_keys")
                .createTableIfMissing(true)
                .build();
        Outbox outbox = outbox();
        List<String> sent = new ArrayList<>();

        Outcome applied = inbox.handle(Delivery.of("pay-1"), c -> {
            sent.add(outbox.send(c, message("order-3", "paid 30")));
            return Outcome.processed();
        });
        Outcome failed = inbox.handle(Delivery.of("pay-2"), c -> {
            outbox.send(c, message("order-4", "paid 40"));
            throw new IllegalStateException("the charge failed after the send");
        });
        Outcome duplicate = inbox.handle(Delivery.of("pay-1"), c -> {
            outbox.send(c, message("order-3", "paid 30 again"));
            return Outcome.processed();
        });

        assertThat(applied.type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(failed.type()).isEqualTo(Outcome.Type.FAILED);
        assertThat(duplicate.type()).isEqualTo(Outcome.Type.DUPLICATE);
        RecordingPublisher broker = new RecordingPublisher();
        started(relay(broker).build()).relayOnce();
        assertThat(broker.ids()).as("only the applied handling's message").isEqualTo(sent);
    }

    private JdbcInbox inbox(javax.sql.DataSource dataSource) {
        return JdbcInbox.builder(dataSource)
                .namespace(table)
                .table(table + "_keys")
                .createTableIfMissing(true)
                .build();
    }

    private long count(String sql) throws Exception {
        try (Connection c = db.connection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static void effect(Connection c, String payment) throws java.sql.SQLException {
        try (var ps = c.prepareStatement("INSERT INTO effects (payment) VALUES (?)")) {
            ps.setString(1, payment);
            ps.executeUpdate();
        }
    }

    private void effectsTable() {
        db.execute("DROP TABLE IF EXISTS effects");
        db.execute("CREATE TABLE effects (payment VARCHAR(64) NOT NULL)");
    }

    @Test
    void inboxHandler_whoseMessageIdIsTaken_appliesNothing_neitherMarkNorEffectNorMessage() throws Exception {
        effectsTable();
        commit(message("order-0", "earlier").withMessageId("PAID-7"));
        JdbcInbox inbox = inbox(db.dataSource());
        Outbox outbox = outbox();

        Outcome taken = inbox.handle(Delivery.of("pay-7"), c -> {
            effect(c, "pay-7");
            outbox.send(c, message("order-7", "first message"));
            outbox.send(c, message("order-7", "paid 70").withMessageId("PAID-7"));
            return Outcome.processed();
        });

        assertThat(taken.type()).as(taken.toString()).isEqualTo(Outcome.Type.FAILED);
        assertThat(taken.cause())
                .hasValueSatisfying(cause -> assertThat(cause)
                        .isInstanceOf(java.sql.SQLException.class)
                        .hasMessageContaining("PAID-7"));
        assertThat(count("SELECT COUNT(*) FROM effects")).as("the effect").isZero();
        assertThat(rows()).as("only the earlier message").isEqualTo(1);
        Outcome redelivered = inbox.handle(Delivery.of("pay-7"), c -> {
            effect(c, "pay-7");
            outbox.send(c, message("order-7", "paid 70"));
            return Outcome.processed();
        });
        assertThat(redelivered.type())
                .as("no mark was left: the redelivery runs")
                .isEqualTo(Outcome.Type.PROCESSED);
        assertThat(count("SELECT COUNT(*) FROM effects")).isEqualTo(1);
        assertThat(rows()).isEqualTo(2);
    }

    @Test
    void handleBatch_aDeliveryWhoseMessageIdIsTaken_failsAlone_theOthersCommitEachMessageOnce() throws Exception {
        effectsTable();
        commit(message("order-0", "earlier").withMessageId("PAID-2"));
        JdbcInbox inbox = inbox(db.dataSource());
        Outbox outbox = outbox();
        AtomicInteger runs = new AtomicInteger();
        List<Delivery> batch = List.of(Delivery.of("b-0"), Delivery.of("b-1"), Delivery.of("b-2"), Delivery.of("b-3"));

        List<Outcome> outcomes = inbox.handleBatch(batch, (c, contexts) -> {
            List<Outcome> answers = new ArrayList<>();
            for (var context : contexts) {
                runs.incrementAndGet();
                String key = context.delivery().key();
                effect(c, key);
                OutboxMessage m = message("order-" + key, "paid " + key);
                outbox.send(c, key.equals("b-2") ? m.withMessageId("PAID-2") : m);
                answers.add(Outcome.processed());
            }
            return answers;
        });

        assertThat(outcomes)
                .extracting(Outcome::type)
                .containsExactly(
                        Outcome.Type.PROCESSED, Outcome.Type.PROCESSED, Outcome.Type.FAILED, Outcome.Type.PROCESSED);
        assertThat(runs).as("the batch was split to find the delivery at fault").hasValueGreaterThan(4);
        assertThat(count("SELECT COUNT(*) FROM effects WHERE payment = 'b-2'")).isZero();
        assertThat(count("SELECT COUNT(*) FROM effects")).isEqualTo(3);
        for (String key : List.of("b-0", "b-1", "b-3")) {
            assertThat(count("SELECT COUNT(*) FROM " + table + " WHERE message_key = 'order-" + key + "'"))
                    .as("the message of " + key + ", once, whatever the reruns")
                    .isEqualTo(1);
        }
        assertThat(rows()).isEqualTo(4);
    }

    @Test
    void inboxHandler_thatSendsAndAnswersNotFinal_leavesNoMessage_norOneInTheConnectionsNextTransaction()
            throws Exception {
        try (com.zaxxer.hikari.HikariDataSource onePooled = onePooledConnection()) {
            JdbcInbox inbox = inbox(onePooled);
            Outbox outbox = outbox();

            Outcome later = inbox.handle(Delivery.of("pay-8"), c -> {
                outbox.send(c, message("order-8", "rolled back"));
                return Outcome.inProgress("not yet", null);
            });
            Outcome next = inbox.handle(Delivery.of("pay-9"), c -> {
                outbox.send(c, message("order-9", "paid 90"));
                return Outcome.processed();
            });
            Outcome withoutSend = inbox.handle(Delivery.of("pay-10"), c -> Outcome.processed());

            assertThat(later.type()).isEqualTo(Outcome.Type.IN_PROGRESS);
            assertThat(next.type()).isEqualTo(Outcome.Type.PROCESSED);
            assertThat(withoutSend.type()).isEqualTo(Outcome.Type.PROCESSED);
        }
        RecordingPublisher broker = new RecordingPublisher();
        started(relay(broker).build()).relayOnce();
        assertThat(broker.published()).extracting(p -> p.record().key()).containsExactly("order-9");
    }

    /**
     * A send the handler rolls back to a savepoint, through JDBC or in SQL (a nested step that failed and was
     * compensated), is gone with it; the sends around it commit. A design that defers the insert (to ride the commit)
     * must keep this: one did not.
     */
    @Test
    void sendsRolledBackToASavepoint_areNotKept_theOthersAre() throws Exception {
        JdbcInbox inbox = inbox(db.dataSource());
        Outbox outbox = outbox();
        List<String> kept = new ArrayList<>();

        Outcome applied = inbox.handle(Delivery.of("pay-13"), c -> {
            kept.add(outbox.send(c, message("order-13", "before")));
            Savepoint step = c.setSavepoint();
            outbox.send(c, message("order-13", "undone through JDBC"));
            c.rollback(step);
            try (Statement s = c.createStatement()) {
                s.execute("SAVEPOINT sql_step");
                outbox.send(c, message("order-13", "undone in SQL"));
                s.execute("ROLLBACK TO SAVEPOINT sql_step");
            }
            kept.add(outbox.send(c, message("order-13", "after")));
            return Outcome.processed();
        });

        assertThat(applied.type()).as(applied.toString()).isEqualTo(Outcome.Type.PROCESSED);
        RecordingPublisher broker = new RecordingPublisher();
        started(relay(broker).build()).relayOnce();
        assertThat(broker.ids()).containsExactlyElementsOf(kept);
    }

    @Test
    void severalSendsOfOneHandler_arePublishedInSendOrder() throws Exception {
        JdbcInbox inbox = inbox(db.dataSource());
        Outbox outbox = outbox();
        List<String> sent = new ArrayList<>();

        Outcome applied = inbox.handle(Delivery.of("pay-11"), c -> {
            for (int i = 0; i < 5; i++) {
                sent.add(outbox.send(c, message(i % 2 == 0 ? "order-11" : "order-12", "step " + i)));
            }
            return Outcome.processed();
        });

        assertThat(applied.type()).isEqualTo(Outcome.Type.PROCESSED);
        RecordingPublisher broker = new RecordingPublisher();
        started(relay(broker).build()).relayOnce();
        assertThat(broker.ids()).containsExactlyInAnyOrderElementsOf(sent);
        List<String> ordered = new ArrayList<>();
        try (Connection c = db.connection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT message_id FROM " + table + " ORDER BY id")) {
            while (rs.next()) {
                ordered.add(rs.getString(1));
            }
        }
        assertThat(ordered).as("inserted in send order").isEqualTo(sent);
    }

    private com.zaxxer.hikari.HikariDataSource onePooledConnection() {
        com.zaxxer.hikari.HikariConfig config = new com.zaxxer.hikari.HikariConfig();
        config.setJdbcUrl(db.url());
        config.setMaximumPoolSize(1);
        return new com.zaxxer.hikari.HikariDataSource(config);
    }

    @Test
    void sendOnAnAutoCommitConnection_isRefused_withTheFix() throws Exception {
        try (Connection c = db.connection()) {
            c.setAutoCommit(true);
            assertThatThrownBy(() -> outbox().send(c, message("order-5", "x")))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("autoCommit")
                    .hasMessageContaining("open transaction");
        }
        assertThat(rows()).isZero();
    }

    @Test
    void relayCrash_afterTheBrokersAck_beforeSent_republishesTheSameId() throws Exception {
        List<String> ids = commit(message("order-6", "paid 60"));
        RecordingPublisher broker = new RecordingPublisher();
        broker.answer(r -> Answer.ACK_THEN_CRASH);
        OutboxRelay crashing = relay(broker.as("first")).relayId("first").build();

        assertThatThrownBy(crashing::relayOnce).isInstanceOf(RecordingPublisher.Crash.class);
        // The crashed relay never closes: its shards are taken over when its lease ends.
        broker.answer(r -> Answer.ACK);
        OutboxRelay next = started(relay(broker.as("second")).relayId("second").build());
        assertThat(next.relayOnce()).as("the first relay's lease still holds").isZero();
        passes(LEASE.plusSeconds(1));

        assertThat(next.relayOnce()).isEqualTo(1);
        assertThat(broker.ids()).containsExactly(ids.get(0), ids.get(0));
        assertThat(broker.published().get(1).relay()).isEqualTo("second");
        assertThat(next.stats().unsent()).isZero();
    }

    @Test
    void anOldOwnersLateMark_onAMessageTheNewOwnerParked_doesNotStrandItsKey() throws Exception {
        List<String> ids = commit(message("late", "l0"), message("late", "l1"));
        RecordingPublisher broker = new RecordingPublisher();
        // The old owner: the broker acknowledges l0, and a full batch defers the mark to the next cycle.
        OutboxRelay old =
                started(relay(broker.as("old")).relayId("old").batchSize(1).build());
        assertThat(old.relayOnce()).isEqualTo(1);
        // It stalls past its lease (a GC pause, a database it cannot reach); the new owner meets a refusing broker.
        passes(LEASE.plusSeconds(1));
        broker.answer(r -> Answer.REFUSE);
        OutboxRelay next = started(relay(broker.as("next"))
                .relayId("next")
                .retryPolicy(RetryPolicy.builder().maxAttempts(1).jitter(0).build())
                .build());
        next.relayOnce();
        assertThat(next.parked(10)).extracting(ParkedMessage::messageId).containsExactly(ids.get(0));
        // The old owner comes back and marks what the broker acknowledged to it: l0 is sent after all.
        old.relayOnce();
        broker.answer(r -> Answer.ACK);

        for (int i = 0; i < 3; i++) {
            passes(Duration.ofSeconds(LEASE.toSeconds()));
            next.relayOnce();
        }

        assertThat(payloads(broker, "late"))
                .as("l1 is published: a sent message holds back nothing")
                .containsExactly("l0", "l1");
        assertThat(next.stats().unsent()).isZero();
    }

    @Test
    void aPublisherThatThrowsAnError_doesNotEndTheRelaysThread() throws Exception {
        List<String> ids = commit(message("order-e", "paid"));
        RecordingPublisher broker = new RecordingPublisher();
        AtomicInteger calls = new AtomicInteger();
        List<Throwable> failures = new CopyOnWriteArrayList<>();
        dev.idem.outbox.spi.OutboxPublisher throwsOnce = record -> {
            if (calls.getAndIncrement() == 0) {
                throw new NoClassDefFoundError("a serializer class the broker client loads lazily");
            }
            return broker.publish(record);
        };
        started(OutboxRelay.builder(db.dataSource(), throwsOnce)
                .table(table)
                .shards(4)
                .pollInterval(Duration.ofMillis(10))
                .retryPolicy(RetryPolicy.builder()
                        .initialDelay(Duration.ofMillis(50))
                        .jitter(0)
                        .build())
                .listener(new OutboxListener() {
                    @Override
                    public void relayFailed(Throwable failure) {
                        failures.add(failure);
                    }
                })
                .build()
                .start());

        await().atMost(Duration.ofSeconds(30)).until(() -> !broker.ids().isEmpty());

        assertThat(broker.ids()).containsExactly(ids.get(0));
        assertThat(failures).singleElement().isInstanceOf(NoClassDefFoundError.class);
    }

    @Test
    void aPublisherThatAwaitsEachAckInPublish_doesNotKeepAWaveGoingPastItsLease() throws Exception {
        // RabbitOutboxPublisher and NatsOutboxPublisher wait for the confirm (PublishAck) inside publish(), so a wave
        // of many keys on a slow broker lasts keys x latency: here 20 x 300 ms against a lease of 3 s.
        int keys = 20;
        for (int k = 0; k < keys; k++) {
            commit(message("k" + k, "m" + k));
        }
        RecordingPublisher broker = new RecordingPublisher();
        List<OutboxRelay> pair = new ArrayList<>();
        for (String name : List.of("first", "second")) {
            RecordingPublisher view = broker.as(name);
            dev.idem.outbox.spi.OutboxPublisher awaitsTheAck = record -> {
                java.util.concurrent.locks.LockSupport.parkNanos(
                        Duration.ofMillis(300).toNanos()); // the latency
                return CompletableFuture.completedFuture(view.publish(record).join());
            };
            pair.add(started(OutboxRelay.builder(db.dataSource(), awaitsTheAck)
                    .table(table)
                    .shards(4)
                    .lease(Duration.ofSeconds(3))
                    .publishTimeout(Duration.ofSeconds(1))
                    .pollInterval(Duration.ofMillis(10))
                    .relayId(name)
                    .build()));
        }
        pair.get(0).start();
        await().atMost(Duration.ofSeconds(10)).until(() -> !broker.published().isEmpty());
        pair.get(1).start();

        await().atMost(Duration.ofSeconds(60)).until(() -> pair.get(0).stats().unsent() == 0);
        pair.forEach(OutboxRelay::close);

        assertThat(broker.violations()).as("one key in flight on two relays").isEmpty();
        assertThat(broker.ids())
                .as("each published once: no lease lapsed mid-wave")
                .doesNotHaveDuplicates();
    }

    @Test
    void close_returns_whileAPublishHangs() throws Exception {
        commit(message("order-h", "paid"));
        // A RabbitMQ connection blocked by a memory alarm holds basicPublish, interrupts or not, until the alarm
        // clears.
        java.util.concurrent.CountDownLatch entered = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch alarmCleared = new java.util.concurrent.CountDownLatch(1);
        dev.idem.outbox.spi.OutboxPublisher blocked = record -> {
            entered.countDown();
            long until = System.nanoTime() + Duration.ofSeconds(90).toNanos();
            while (alarmCleared.getCount() > 0 && System.nanoTime() < until) {
                java.util.concurrent.locks.LockSupport.parkNanos(
                        Duration.ofMillis(50).toNanos());
            }
            return CompletableFuture.failedFuture(new java.io.IOException("connection blocked"));
        };
        OutboxRelay relay = OutboxRelay.builder(db.dataSource(), blocked)
                .table(table)
                .shards(4)
                .publishTimeout(Duration.ofMillis(100))
                .build()
                .start();
        try {
            assertThat(entered.await(30, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
            CompletableFuture<Void> closing = CompletableFuture.runAsync(relay::close);

            await().atMost(Duration.ofSeconds(45)).until(closing::isDone);
            assertThat(alarmCleared.getCount())
                    .as("closed while the publish still hangs")
                    .isOne();
        } finally {
            alarmCleared.countDown();
        }
    }

    @Test
    void aRelayWhoseClockStepsAhead_doesNotTakeShardsALiveRelayHolds() throws Exception {
        RecordingPublisher broker = new RecordingPublisher();
        OutboxRelay owner = started(relay(broker.as("owner")).relayId("owner").build());
        owner.relayOnce(); // takes every shard
        // An NTP step, a VM resumed with a stale clock: ahead of the owner's clock (moved on by earlier tests).
        MutableClock ahead = MutableClock.at(clock.instant().plus(LEASE.multipliedBy(2)));
        OutboxRelay stepped = started(
                relay(broker.as("stepped")).relayId("stepped").clock(ahead).build());

        stepped.relayOnce();

        assertThat(shardsOwnedBy("stepped"))
                .as("shards taken while their owner's leases hold")
                .isZero();
        assertThat(shardsOwnedBy("owner")).isEqualTo(4);
    }

    @Test
    void aRelayWhoseClockStepsBack_stopsPublishingShardsAnotherRelayTook() throws Exception {
        RecordingPublisher broker = new RecordingPublisher();
        MutableClock behind = MutableClock.at(clock.instant());
        OutboxRelay owner =
                started(relay(broker.as("owner")).relayId("owner").clock(behind).build());
        owner.relayOnce(); // takes every shard
        // It stalls past its lease (a GC pause) and its clock steps back as far (an NTP step): by its clock no time
        // passed. The other relay takes every shard.
        passes(LEASE.plusSeconds(1));
        OutboxRelay taker = started(relay(broker.as("taker")).relayId("taker").build());
        taker.relayOnce();
        assertThat(shardsOwnedBy("taker")).isEqualTo(4);
        List<String> ids = commit(message("order-s", "paid"));

        assertThat(owner.relayOnce())
                .as("published by the relay whose shards were taken")
                .isZero();
        assertThat(taker.relayOnce()).isEqualTo(1);

        assertThat(broker.published())
                .extracting(RecordingPublisher.Published::relay)
                .containsExactly("taker");
        assertThat(broker.ids()).containsExactly(ids.get(0));
    }

    @Test
    void aCrashedRelaysShards_areTakenOver_whenItsLeaseEndsOnTheDatabasesClock() throws Exception {
        List<String> ids = commit(message("order-d", "paid"));
        RecordingPublisher broker = new RecordingPublisher();
        broker.answer(r -> Answer.ACK_THEN_CRASH);
        OutboxRelay crashing = relay(broker.as("first"))
                .relayId("first")
                .lease(Duration.ofSeconds(1))
                .publishTimeout(Duration.ofMillis(400))
                .build();
        assertThatThrownBy(crashing::relayOnce).isInstanceOf(RecordingPublisher.Crash.class);
        broker.answer(r -> Answer.ACK);
        // Real time on every clock but the wall clock, which stands still: only the database's can end the lease.
        OutboxRelay next = started(relay(broker.as("second"))
                .relayId("second")
                .nanoTime(System::nanoTime)
                .build());

        await().atMost(Duration.ofSeconds(30)).until(() -> next.relayOnce() == 1);

        assertThat(broker.ids()).containsExactly(ids.get(0), ids.get(0));
        assertThat(next.stats().unsent()).isZero();
    }

    @Test
    void aMessageCommittedAfterHigherIdsWereRelayed_isStillRelayed() throws Exception {
        RecordingPublisher broker = new RecordingPublisher();
        OutboxRelay relay = started(relay(broker).build());
        try (Connection longTransaction = db.connection()) {
            longTransaction.setAutoCommit(false);
            String early = outbox().send(longTransaction, message("slow-order", "lower id, commits late"));
            List<String> later = commit(message("fast-order", "higher id, commits first"));
            relay.relayOnce();
            assertThat(broker.ids()).containsExactlyElementsOf(later);

            longTransaction.commit();
            relay.relayOnce();

            assertThat(broker.ids()).containsExactly(later.get(0), early);
        }
        assertThat(relay.stats().unsent()).isZero();
    }

    @Test
    void aKeysMessages_arePublishedInOrder_andAFailureHoldsBackOnlyItsKey() throws Exception {
        for (int i = 0; i < 5; i++) {
            commit(message("slow", "s" + i), message("fast", "f" + i));
        }
        RecordingPublisher broker = new RecordingPublisher();
        AtomicInteger timeouts = new AtomicInteger();
        broker.answer(
                r -> r.key().equals("slow") && new String(r.payload()).equals("s2") && timeouts.getAndIncrement() == 0
                        ? Answer.TIMEOUT
                        : Answer.ACK);
        OutboxRelay relay = started(relay(broker)
                .retryPolicy(RetryPolicy.builder()
                        .initialDelay(Duration.ofSeconds(5))
                        .jitter(0)
                        .build())
                .build());

        relay.relayOnce();
        assertThat(payloads(broker, "slow")).containsExactly("s0", "s1");
        assertThat(payloads(broker, "fast")).containsExactly("f0", "f1", "f2", "f3", "f4");
        assertThat(relay.relayOnce())
                .as("s2 backs off; s3 and s4 wait behind it")
                .isZero();
        passes(Duration.ofSeconds(6));
        relay.relayOnce();

        assertThat(payloads(broker, "slow")).containsExactly("s0", "s1", "s2", "s3", "s4");
        assertThat(broker.violations()).isEmpty();
        assertThat(relay.parked(10))
                .as("a broker that does not answer parks nothing")
                .isEmpty();
    }

    private static List<String> payloads(RecordingPublisher broker, String key) {
        return broker.published().stream()
                .filter(p -> p.record().key().equals(key))
                .map(p -> new String(p.record().payload(), java.nio.charset.StandardCharsets.UTF_8))
                .toList();
    }

    @Test
    void aMessageTheBrokerKeepsRefusing_isParkedWithItsReason_visible_andBlocksOnlyItsKey() throws Exception {
        commit(message("bad", "b0"), message("bad", "b1"), message("good", "g0"));
        RecordingPublisher broker = new RecordingPublisher();
        broker.answer(r -> new String(r.payload()).equals("b0") ? Answer.REFUSE : Answer.ACK);
        List<String> parkedEvents = new CopyOnWriteArrayList<>();
        OutboxRelay relay = started(relay(broker)
                .retryPolicy(RetryPolicy.builder()
                        .initialDelay(Duration.ofSeconds(1))
                        .maxDelay(Duration.ofSeconds(1))
                        .maxAttempts(3)
                        .jitter(0)
                        .build())
                .listener(new OutboxListener() {
                    @Override
                    public void parked(dev.idem.outbox.spi.OutboxRecord record, String reason) {
                        parkedEvents.add(record.messageId() + ": " + reason);
                    }
                })
                .build());

        for (int i = 0; i < 5; i++) {
            relay.relayOnce();
            passes(Duration.ofSeconds(2));
        }

        assertThat(payloads(broker, "good")).containsExactly("g0");
        assertThat(payloads(broker, "bad")).as("b1 waits behind the parked b0").isEmpty();
        List<ParkedMessage> parked = relay.parked(10);
        assertThat(parked).hasSize(1);
        assertThat(parked.get(0).key()).isEqualTo("bad");
        assertThat(parked.get(0).refusals()).isEqualTo(3);
        assertThat(parked.get(0).reason()).contains("too large");
        assertThat(parkedEvents).hasSize(1).allMatch(e -> e.contains("too large"));
        OutboxStats stats = relay.stats();
        assertThat(stats.parked()).isEqualTo(1);
        assertThat(stats.unsent()).isEqualTo(2);

        broker.answer(r -> Answer.ACK);
        assertThat(relay.unpark(parked.get(0).messageId())).isTrue();
        relay.relayOnce();
        assertThat(payloads(broker, "bad")).containsExactly("b0", "b1");
        assertThat(relay.stats()).isEqualTo(new OutboxStats(0, 0, Duration.ZERO));
    }

    @Test
    void purge_deletesSentMessagesPastTheRetention_neverAnUnsentOne() throws Exception {
        commit(message("a", "sent"), message("b", "refused"), message("c", "waits"));
        RecordingPublisher broker = new RecordingPublisher();
        broker.answer(r -> r.key().equals("a") ? Answer.ACK : Answer.TIMEOUT);
        OutboxRelay relay = started(relay(broker).retention(Duration.ofDays(1)).build());
        relay.relayOnce();
        assertThat(relay.stats().unsent()).isEqualTo(2);

        assertThat(relay.purgeOnce()).as("within the retention").isZero();
        passes(Duration.ofDays(30));
        assertThat(relay.purgeOnce()).isEqualTo(1);

        assertThat(rows()).isEqualTo(2);
        assertThat(relay.stats().unsent()).isEqualTo(2);
        assertThat(relay.stats().oldestUnsentAge()).isGreaterThanOrEqualTo(Duration.ofDays(30));
    }

    @Test
    void relaysStartingAtOnce_allPrepareTheShards_andShareThem() throws Exception {
        commit(message("a", "1"));
        RecordingPublisher broker = new RecordingPublisher();
        List<OutboxRelay> four = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            four.add(started(relay(broker.as("r" + i)).relayId("r" + i).build()));
        }
        var pool = java.util.concurrent.Executors.newFixedThreadPool(4);
        try {
            List<java.util.concurrent.Future<Integer>> cycles = new ArrayList<>();
            for (OutboxRelay r : four) {
                cycles.add(pool.submit(r::relayOnce));
            }
            int published = 0;
            for (var cycle : cycles) {
                published += cycle.get(30, java.util.concurrent.TimeUnit.SECONDS);
            }
            assertThat(published).isLessThanOrEqualTo(1);
        } finally {
            pool.shutdownNow();
        }
        passes(LEASE);
        for (OutboxRelay r : four) {
            r.relayOnce();
        }
        assertThat(broker.ids()).hasSize(1);
        assertThat(four.get(0).stats().unsent()).isZero();
    }

    @Test
    void twoRelays_shareTheShards_andNeverInterleaveOneKey() throws Exception {
        RecordingPublisher broker = new RecordingPublisher();
        List<OutboxRelay> pair = new ArrayList<>();
        for (String name : List.of("left", "right")) {
            pair.add(started(OutboxRelay.builder(db.dataSource(), broker.as(name))
                    .table(table)
                    .shards(8)
                    // Not this test's subject: at a load average of 40 the test broker's acks came later than a
                    // 500 ms publish timeout, and the relay rightly published those messages again (same id). The
                    // lease must outlast two publish timeouts.
                    .lease(Duration.ofSeconds(4))
                    .publishTimeout(Duration.ofMillis(1500))
                    .pollInterval(Duration.ofMillis(10))
                    .batchSize(20)
                    .relayId(name)
                    .build()
                    .start()));
        }
        int keys = 12;
        int sent = 0;
        // Keep sending until both relays have published: the second joins and the first hands it shards back at its
        // next lease renewal (every quarter of the lease). Paced and bounded by time, not by count: on H2 a count of
        // 3,000 was
        // sent in 0.9 s, before that renewal, and the second relay never published.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline
                && broker.published().stream()
                                .map(RecordingPublisher.Published::relay)
                                .distinct()
                                .count()
                        < 2) {
            for (int k = 0; k < keys; k++) {
                commit(message("k" + k, "m" + sent));
                sent++;
            }
            Thread.sleep(10);
        }
        for (int i = 0; i < 10; i++, sent += keys) {
            for (int k = 0; k < keys; k++) {
                commit(message("k" + k, "m" + (sent + k)));
            }
        }
        int total = sent;
        await().atMost(Duration.ofSeconds(60)).until(() -> broker.published().size() >= total);
        pair.forEach(OutboxRelay::close);

        assertThat(broker.violations()).isEmpty();
        assertThat(broker.published()).hasSize(total);
        assertThat(broker.published().stream()
                        .map(RecordingPublisher.Published::relay)
                        .distinct())
                .containsExactlyInAnyOrder("left", "right");
        broker.positionsByKey()
                .forEach((key, positions) -> assertThat(positions)
                        .as("key %s published once each, in order", key)
                        .isSorted()
                        .doesNotHaveDuplicates());
    }
}
