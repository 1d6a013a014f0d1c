package dev.idem.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.RetryPolicy;
import dev.idem.testsupport.TestDatabase;
import dev.idem.testsupport.TestServers;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * On PostgreSQL a committed message wakes the relay at once: every relay here polls once a minute (the longest poll
 * allowed) and each message must be published well within that, so only the sender's notification can have woken
 * the relay.
 */
class PostgresCommitNotificationsTest {
    private static final Duration WITHIN_THE_POLL = Duration.ofSeconds(30);
    private static TestDatabase db;

    @BeforeAll
    static void database() {
        db = TestDatabase.postgres("PostgresCommitNotificationsTest");
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

    private static OutboxRelay relay(String table, RecordingPublisher publisher) {
        return OutboxRelay.builder(db.dataSource(), publisher)
                .table(table)
                .pollInterval(Duration.ofMinutes(1))
                .retryPolicy(RetryPolicy.builder()
                        .initialDelay(Duration.ofMillis(50))
                        .maxDelay(Duration.ofMillis(200))
                        .build())
                .build();
    }

    private static String send(String table, String payload, boolean commit) throws SQLException {
        try (Connection c = db.connection()) {
            c.setAutoCommit(false);
            String id = Outbox.builder()
                    .table(table)
                    .build()
                    .send(c, OutboxMessage.to("payments").key("order-1").payload(payload));
            if (commit) {
                c.commit();
            } else {
                c.rollback();
            }
            return id;
        }
    }

    /**
     * The backends listening on {@code table}'s channel, from the server's view of every session: their last statement
     * is the {@code LISTEN} or the waiting lock's.
     */
    private static List<Integer> listeners(String table) throws SQLException {
        try (Connection c = db.connection();
                PreparedStatement ps =
                        c.prepareStatement("SELECT pid FROM pg_stat_activity WHERE query IN (?, ?, ?)")) {
            ps.setString(1, "LISTEN " + OutboxSql.channel(table));
            ps.setString(2, OutboxSql.waitForCommits(table));
            ps.setString(3, OutboxSql.stopWaiting(table));
            List<Integer> pids = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    pids.add(rs.getInt(1));
                }
            }
            return pids;
        }
    }

    @Test
    void committedMessage_wakesTheIdleRelay_rolledBackOneIsNeverPublished() throws Exception {
        String table = table("notify");
        RecordingPublisher broker = new RecordingPublisher();
        try (OutboxRelay relay = relay(table, broker).start()) {
            await().atMost(WITHIN_THE_POLL).until(() -> listeners(table).size() == 1);
            send(table, "rolled back", false);
            String committed = send(table, "committed", true);
            await().atMost(WITHIN_THE_POLL).until(() -> broker.ids().contains(committed));
            String next = send(table, "next", true);
            await().atMost(WITHIN_THE_POLL).until(() -> broker.ids().contains(next));
            assertThat(broker.ids()).containsExactly(committed, next);
            assertThat(relay.stats().unsent()).isZero();
        }
        assertThat(listeners(table))
                .as("closing the relay gives the listen connection back")
                .isEmpty();
    }

    /** The backends that hold {@code table}'s waiting lock: the listen sessions of the relays that wait idle. */
    private static List<Integer> waitingRelays(String table) throws SQLException {
        try (Connection c = db.connection();
                PreparedStatement ps = c.prepareStatement("SELECT pid FROM pg_locks WHERE locktype = 'advisory'"
                        + " AND classid = ? AND objid = ? AND objsubid = 2 AND granted")) {
            ps.setLong(1, OutboxSql.WAITING);
            ps.setLong(2, Integer.toUnsignedLong(OutboxSql.channel(table).hashCode()));
            List<Integer> pids = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    pids.add(rs.getInt(1));
                }
            }
            return pids;
        }
    }

    /** Whether a relay waits idle for {@code table}'s commits: a session holds the waiting lock. */
    private static boolean aRelayWaits(String table) throws SQLException {
        return !waitingRelays(table).isEmpty();
    }

    /** The notifications of {@code table}'s channel that reach a session of the test's own within {@code wait}. */
    private static int notificationsWithin(Connection listening, Duration wait) throws SQLException {
        PGNotification[] received = listening.unwrap(PGConnection.class).getNotifications((int) wait.toMillis());
        return received == null ? 0 : received.length;
    }

    @Test
    void aSenderNotifies_onlyWhileARelayWaitsIdle() throws Exception {
        String table = table("skip");
        try (Connection listening = db.connection();
                Statement s = listening.createStatement()) {
            s.execute("LISTEN " + OutboxSql.channel(table));
            send(table, "no relay", true);
            assertThat(notificationsWithin(listening, Duration.ofSeconds(1)))
                    .as("no relay waits: the sender skips the notification (its cluster-wide commit lock)")
                    .isZero();
            RecordingPublisher broker = new RecordingPublisher();
            try (OutboxRelay relay = relay(table, broker).start()) {
                await().atMost(WITHIN_THE_POLL).until(() -> aRelayWaits(table));
                String id = send(table, "a relay waits", true);
                assertThat(notificationsWithin(listening, Duration.ofSeconds(5)))
                        .as("the idle relay is woken")
                        .isPositive();
                await().atMost(WITHIN_THE_POLL).until(() -> broker.ids().contains(id));
            }
            s.execute("UNLISTEN *");
        }
    }

    @Test
    void aSenderThatSkippedTheNotification_committingAfterTheRelayWentIdle_isPublishedWithoutThePoll()
            throws Exception {
        String table = table("inflight");
        RecordingPublisher broker = new RecordingPublisher();
        try (Connection sender = db.connection()) {
            sender.setAutoCommit(false);
            String id = Outbox.builder()
                    .table(table)
                    .build()
                    .send(sender, OutboxMessage.to("payments").key("order-1").payload("in flight"));
            try (OutboxRelay relay = relay(table, broker).start()) {
                await().atMost(WITHIN_THE_POLL).until(() -> aRelayWaits(table));
                Thread.sleep(500); // the relay's looks while the sender's transaction is open find nothing
                sender.commit();
                await().atMost(WITHIN_THE_POLL).until(() -> broker.ids().contains(id));
            }
        }
    }

    private static void terminate(int pid) throws SQLException {
        try (Connection c = db.connection();
                PreparedStatement ps = c.prepareStatement("SELECT pg_terminate_backend(?)")) {
            ps.setInt(1, pid);
            ps.execute();
        }
    }

    /**
     * The listen session dies while the relay sleeps; a sender sends while no relay waits (it skips the notification)
     * and commits only after the relay listens again and looked once: the relay must make sure of such senders again,
     * as when it first went idle, rather than sleep for its poll.
     */
    @Test
    void listenConnectionTerminated_aSenderThatSkippedTheNotification_committingAfterTheRelayListensAgain_wakesIt()
            throws Exception {
        String table = table("relisten");
        RecordingPublisher broker = new RecordingPublisher();
        OutboxRelay relay = OutboxRelay.builder(db.dataSource(), broker)
                .table(table)
                .pollInterval(Duration.ofMinutes(1))
                .retryPolicy(RetryPolicy.builder()
                        .initialDelay(Duration.ofSeconds(2)) // listens again 2 s after the termination
                        .maxDelay(Duration.ofSeconds(2))
                        .build())
                .build();
        try (relay;
                Connection sender = db.connection()) {
            relay.start();
            await().atMost(WITHIN_THE_POLL).until(() -> waitingRelays(table).size() == 1);
            Thread.sleep(300); // the relay made sure of the senders, looked a last time, and sleeps for its poll
            int first = waitingRelays(table).get(0);
            terminate(first);
            await().atMost(Duration.ofSeconds(1))
                    .until(() -> waitingRelays(table).isEmpty());
            sender.setAutoCommit(false);
            String id = Outbox.builder()
                    .table(table)
                    .build()
                    .send(sender, OutboxMessage.to("payments").key("order-1").payload("sent while no relay waited"));
            await().atMost(Duration.ofSeconds(10))
                    .until(() -> !waitingRelays(table).isEmpty()
                            && waitingRelays(table).get(0) != first);
            Thread.sleep(500); // the relay, woken by its new listen session, looked and found nothing committed
            sender.commit();
            await().atMost(Duration.ofSeconds(10)).until(() -> broker.ids().contains(id));
        }
    }

    private static String keyOfShard(int shard, int shards) {
        for (int i = 0; ; i++) {
            String key = "order-" + i;
            if (KeyHash.of(key) % shards == shard) {
                return key;
            }
        }
    }

    private static String send(String table, String key) throws SQLException {
        try (Connection c = db.connection()) {
            c.setAutoCommit(false);
            String id = Outbox.builder()
                    .table(table)
                    .build()
                    .send(c, OutboxMessage.to("payments").key(key).payload("for " + key));
            c.commit();
            return id;
        }
    }

    /**
     * A relay that stops renewing (crashed) holds its shard until its lease ends; its key's message wakes the idle
     * relay, which cannot take the shard yet. Nothing commits after the lease ended: the idle relay must take the shard
     * at its next lease renewal, not at its poll (a minute).
     */
    @Test
    void aCrashedRelaysShard_isTakenOverByTheIdleRelay_atItsLeaseRenewal_notAtItsPoll() throws Exception {
        String table = table("takeover");
        RecordingPublisher survivorBroker = new RecordingPublisher();
        OutboxRelay survivor = OutboxRelay.builder(db.dataSource(), survivorBroker)
                .table(table)
                .shards(2)
                .lease(Duration.ofSeconds(4))
                .publishTimeout(Duration.ofSeconds(1))
                .pollInterval(Duration.ofMinutes(1))
                .build();
        OutboxRelay crashing = OutboxRelay.builder(db.dataSource(), new RecordingPublisher())
                .table(table)
                .shards(2)
                .lease(Duration.ofSeconds(4))
                .publishTimeout(Duration.ofSeconds(1))
                .build();
        try (survivor;
                crashing) {
            crashing.relayOnce(); // alone: takes both shards
            survivor.start(); // owns none yet: the other's leases hold
            await().atMost(WITHIN_THE_POLL).until(() -> aRelayWaits(table));
            Thread.sleep(1_100); // a quarter of the lease: the next cycles renew and balance
            crashing.relayOnce(); // hands shard 1 back to the survivor
            String wakesTheSurvivor = send(table, keyOfShard(1, 2));
            await().atMost(Duration.ofSeconds(10))
                    .until(() -> survivorBroker.ids().contains(wakesTheSurvivor));
            // the crashing relay never renews again: its shard 0 is free 4 s after its last renewal
            String ofTheCrashedRelay = send(table, keyOfShard(0, 2));
            await().atMost(Duration.ofSeconds(12))
                    .until(() -> survivorBroker.ids().contains(ofTheCrashedRelay));
        }
    }

    /**
     * The relay's listen session holds a connection of its data source for as long as it runs: with a pool of one
     * connection the relay's cycles would get none. The relay must still publish (polling, without the wake-up).
     */
    @Test
    void aPoolOfOneConnection_theRelayStillPublishes() throws Exception {
        String table = table("poolofone");
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(db.url());
        config.setMaximumPoolSize(1);
        config.setConnectionTimeout(1_000);
        RecordingPublisher broker = new RecordingPublisher();
        try (HikariDataSource one = new HikariDataSource(config);
                OutboxRelay relay = OutboxRelay.builder(one, broker)
                        .table(table)
                        .pollInterval(Duration.ofMillis(200))
                        .retryPolicy(RetryPolicy.builder()
                                .initialDelay(Duration.ofMillis(200))
                                .maxDelay(Duration.ofSeconds(30))
                                .build())
                        .build()) {
            relay.start();
            Thread.sleep(1_500); // the listener holds the pool's connection
            String id = send(table, "committed", true);
            await().atMost(Duration.ofSeconds(15)).until(() -> broker.ids().contains(id));
        }
    }

    @Test
    void listenConnectionTerminated_theRelayListensAgain_andCommitsStillWakeIt() throws Exception {
        String table = table("terminated");
        RecordingPublisher broker = new RecordingPublisher();
        try (OutboxRelay relay = relay(table, broker).start()) {
            await().atMost(WITHIN_THE_POLL).until(() -> listeners(table).size() == 1);
            int first = listeners(table).get(0);
            try (Connection c = db.connection();
                    PreparedStatement ps = c.prepareStatement("SELECT pg_terminate_backend(?)")) {
                ps.setInt(1, first);
                ps.execute();
            }
            await().atMost(WITHIN_THE_POLL)
                    .until(() ->
                            listeners(table).size() == 1 && listeners(table).get(0) != first);
            String id = send(table, "after the reconnect", true);
            await().atMost(WITHIN_THE_POLL).until(() -> broker.ids().contains(id));
            String next = send(table, "next", true);
            await().atMost(WITHIN_THE_POLL).until(() -> broker.ids().contains(next));
            assertThat(relay.stats().unsent()).isZero();
        }
    }
}
