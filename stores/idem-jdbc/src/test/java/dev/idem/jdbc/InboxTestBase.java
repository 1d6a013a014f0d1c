package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.idem.ConfigurationException;
import dev.idem.DeadLetterException;
import dev.idem.Delivery;
import dev.idem.Fingerprint;
import dev.idem.HandlingContext;
import dev.idem.IdempotencyKey;
import dev.idem.Outcome;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.testkit.MutableClock;
import dev.idem.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Transactional mode, purge and builder checks on one database; a subclass per database says which. */
abstract class InboxTestBase extends InboxFixture {

    // ---------------------------------------------------------------- the big one

    @Test
    @Timeout(300)
    void tenThousandPayments_withTwentyPercentDuplicates_onEightThreads_applyEachExactlyOnce() throws Exception {
        int payments = 10_000;
        Random random = new Random(11);
        long[] amounts = new long[payments];
        List<Integer> deliveries = new ArrayList<>();
        for (int p = 0; p < payments; p++) {
            amounts[p] = 1 + random.nextInt(500);
            deliveries.add(p);
        }
        Collections.shuffle(deliveries, random);
        List<Integer> withCopies = new ArrayList<>(deliveries.size() + payments / 5);
        List<Integer> lateCopies = new ArrayList<>();
        for (int p : deliveries) {
            withCopies.add(p);
            int roll = random.nextInt(20);
            if (roll < 1) {
                withCopies.add(p); // delivered right behind the first: often handled concurrently with it
            } else if (roll < 4) {
                lateCopies.add(p);
            }
        }
        for (int p : lateCopies) {
            withCopies.add(withCopies.size() / 2 + random.nextInt(withCopies.size() / 2), p);
        }
        JdbcInbox inbox = inbox();
        ConcurrentHashMap<Outcome.Type, AtomicInteger> counts = new ConcurrentHashMap<>();
        AtomicInteger next = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<?>> workers = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                workers.add(pool.submit(() -> {
                    for (int i = next.getAndIncrement(); i < withCopies.size(); i = next.getAndIncrement()) {
                        int p = withCopies.get(i);
                        String id = "pay-" + p;
                        Outcome outcome;
                        do {
                            outcome = inbox.handle(
                                    Delivery.of(id, Fingerprint.of(id + ":" + amounts[p])),
                                    pay(id, p % ACCOUNTS, amounts[p]));
                            counts.computeIfAbsent(outcome.type(), x -> new AtomicInteger())
                                    .incrementAndGet();
                        } while (!outcome.isFinal());
                    }
                    return null;
                }));
            }
            for (Future<?> w : workers) {
                w.get(280, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }

        assertThat(counts.get(Outcome.Type.PROCESSED)).hasValue(payments);
        assertThat(counts.get(Outcome.Type.DUPLICATE)).hasValue(withCopies.size() - payments);
        assertThat(withCopies.size() - payments).isGreaterThan(payments / 6);
        long[] expected = new long[ACCOUNTS];
        for (int p = 0; p < payments; p++) {
            expected[p % ACCOUNTS] += amounts[p];
        }
        for (int a = 0; a < ACCOUNTS; a++) {
            assertThat(balance(a)).as("balance of account %d", a).isEqualTo(INITIAL_BALANCE - expected[a]);
        }
        assertThat(queryLong("SELECT COUNT(*) FROM ledger")).isEqualTo(payments);
        assertThat(queryLong("SELECT COUNT(DISTINCT payment_id) FROM ledger")).isEqualTo(payments);
    }

    // ---------------------------------------------------------------- one key

    @Test
    void firstDelivery_isProcessed_andItsCopy_isDuplicate_withStoredResult() throws SQLException {
        JdbcInbox inbox = inbox();
        TransactionalHandler handler = c -> {
            pay("p1", 1, 10).handle(c);
            return Outcome.processed("receipt".getBytes());
        };

        Outcome first = inbox.handle(Delivery.of("p1", "fp"), handler);
        Outcome second = inbox.handle(Delivery.of("p1", "fp"), handler);

        assertThat(first.type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(second.type()).isEqualTo(Outcome.Type.DUPLICATE);
        assertThat(second.result()).hasValue("receipt".getBytes());
        assertThat(balance(1)).isEqualTo(INITIAL_BALANCE - 10);
        assertThat(ledgerRows("p1")).isEqualTo(1);
    }

    @Test
    void sameKey_withOtherFingerprint_isRejected_andNotApplied() throws SQLException {
        JdbcInbox inbox = inbox();
        inbox.handle(Delivery.of("p1", Fingerprint.of("amount=10")), pay("p1", 1, 10));

        Outcome reused = inbox.handle(Delivery.of("p1", Fingerprint.of("amount=99")), pay("p1", 1, 99));

        assertThat(reused.type()).isEqualTo(Outcome.Type.REJECTED);
        assertThat(reused.reason()).contains("different payload");
        assertThat(balance(1)).isEqualTo(INITIAL_BALANCE - 10);
    }

    @Test
    void threadInterrupted_afterTheHandlersWrites_isAppliedOnce_andKeepsTheInterrupt() throws SQLException {
        JdbcInbox inbox = inbox();
        boolean kept;
        try {
            inbox.handle(Delivery.of("p1"), c -> {
                Outcome paid = pay("p1", 1, 10).handle(c);
                Thread.currentThread().interrupt(); // a push consumer's shutdown interrupts its consume threads
                return paid;
            });
        } finally {
            kept = Thread.interrupted();
        }
        Outcome redelivered = inbox.handle(Delivery.of("p1"), pay("p1", 1, 10));

        assertThat(kept).as("the interrupt is kept for the caller").isTrue();
        assertThat(redelivered.type()).isIn(Outcome.Type.PROCESSED, Outcome.Type.DUPLICATE);
        assertThat(balance(1)).isEqualTo(INITIAL_BALANCE - 10);
        assertThat(ledgerRows("p1")).isEqualTo(1);
    }

    @Test
    void handlerThrowing_afterItsWrites_rollsBackWritesAndMark_andTheRedeliveryRuns() throws SQLException {
        JdbcInbox inbox = inbox();

        Outcome failed = inbox.handle(Delivery.of("p1"), c -> {
            pay("p1", 1, 10).handle(c);
            throw new IllegalStateException("payment gateway said no");
        });
        Outcome redelivered = inbox.handle(Delivery.of("p1"), pay("p1", 1, 10));

        assertThat(failed.type()).isEqualTo(Outcome.Type.FAILED);
        assertThat(failed.reason()).contains("payment gateway said no");
        assertThat(redelivered.type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(balance(1)).isEqualTo(INITIAL_BALANCE - 10);
        assertThat(ledgerRows("p1")).isEqualTo(1);
    }

    @Test
    void handlerSqlFailing_rollsBackEverything_andTheRedeliveryRuns() throws SQLException {
        JdbcInbox inbox = inbox();

        Outcome failed = inbox.handle(Delivery.of("p1"), c -> {
            pay("p1", 1, 10).handle(c);
            try (Statement s = c.createStatement()) {
                s.executeUpdate("INSERT INTO no_such_table VALUES (1)");
            }
            return Outcome.processed();
        });
        Outcome redelivered = inbox.handle(Delivery.of("p1"), pay("p1", 1, 10));

        assertThat(failed.type()).isEqualTo(Outcome.Type.FAILED);
        assertThat(redelivered.type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(balance(1)).isEqualTo(INITIAL_BALANCE - 10);
        assertThat(ledgerRows("p1")).isEqualTo(1);
    }

    /**
     * The handler catches its own failed statement and answers PROCESSED. PostgreSQL has aborted the transaction by
     * then and would turn the commit into a silent rollback; MariaDB and H2 commit what did succeed. Either way the
     * effect and the mark commit together, and PROCESSED is never answered for an effect that was not committed
     * (regression: on PostgreSQL it was, and the message was lost).
     */
    @Test
    void handlerSwallowingItsOwnSqlFailure_commitsEffectAndMarkTogether_orNeither_andTheRedeliveryAppliesOnce()
            throws SQLException {
        JdbcInbox inbox = inbox();
        AtomicInteger runs = new AtomicInteger();

        Outcome first = inbox.handle(Delivery.of("p1"), c -> {
            pay("p1", 1, 10).handle(c);
            if (runs.incrementAndGet() == 1) {
                try (Statement s = c.createStatement()) {
                    s.executeUpdate("INSERT INTO no_such_table VALUES (1)");
                } catch (SQLException ignored) {
                    // the handler's choice: carry on without its audit row
                }
            }
            return Outcome.processed();
        });
        long balanceAfterFirst = balance(1);
        Outcome redelivered = inbox.handle(Delivery.of("p1"), pay("p1", 1, 10));

        if (first.type() == Outcome.Type.PROCESSED) {
            assertThat(balanceAfterFirst).isEqualTo(INITIAL_BALANCE - 10);
            assertThat(redelivered.type()).isEqualTo(Outcome.Type.DUPLICATE);
        } else {
            assertThat(balanceAfterFirst).isEqualTo(INITIAL_BALANCE);
            assertThat(redelivered.type()).isEqualTo(Outcome.Type.PROCESSED);
        }
        assertThat(balance(1)).isEqualTo(INITIAL_BALANCE - 10);
        assertThat(ledgerRows("p1")).isEqualTo(1);
    }

    @Test
    void handlerSwallowingItsOwnSqlFailure_inABatch_andInTheCallersTransaction_neverAnswersProcessedForLostWrites()
            throws SQLException {
        JdbcInbox inbox = inbox();
        TransactionalHandler swallowing = c -> {
            pay("a", 1, 10).handle(c);
            try (Statement s = c.createStatement()) {
                s.executeUpdate("INSERT INTO no_such_table VALUES (1)");
            } catch (SQLException ignored) {
                // the handler's choice
            }
            return Outcome.processed();
        };

        List<Outcome> batch = handleEach(inbox, message("a", null, swallowing), message("b", null, pay("b", 2, 20)));
        Outcome joined;
        try (Connection tx = db.connection()) {
            tx.setAutoCommit(false);
            insertAudit(tx, "caller's own write");
            joined = inbox.handle(tx, Delivery.of("c"), swallowing);
            tx.commit();
        }

        assertThat(batch.get(1).type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(balance(2)).isEqualTo(INITIAL_BALANCE - 20);
        assertThat(queryLong("SELECT COUNT(*) FROM audit")).isEqualTo(1);
        long applied = (batch.get(0).type() == Outcome.Type.PROCESSED ? 1 : 0)
                + (joined.type() == Outcome.Type.PROCESSED ? 1 : 0);
        assertThat(ledgerRows("a")).as("%s, %s", batch.get(0), joined).isEqualTo(applied);
        assertThat(balance(1)).isEqualTo(INITIAL_BALANCE - 10 * applied);
        assertThat(marks()).isEqualTo(1 + applied);
        if (db.engine() == TestDatabase.Engine.POSTGRESQL) {
            assertThat(batch.get(0).type()).isEqualTo(Outcome.Type.FAILED);
            assertThat(joined.type()).isEqualTo(Outcome.Type.FAILED);
        }
    }

    @Test
    void outOfOrderOutcome_rollsBackTheHandlersWrites_andLeavesNoMark() throws SQLException {
        JdbcInbox inbox = inbox();

        Outcome early = inbox.handle(Delivery.of("p1"), c -> {
            pay("p1", 1, 10).handle(c);
            return Outcome.outOfOrder("order not created yet");
        });

        assertThat(early.type()).isEqualTo(Outcome.Type.OUT_OF_ORDER);
        assertThat(balance(1)).isEqualTo(INITIAL_BALANCE);
        assertThat(marks()).isZero();
    }

    @Test
    void invalidKey_isRejected_withoutRunningTheHandler() {
        Outcome outcome = inbox().handle(Delivery.of(" "), c -> {
            throw new AssertionError("must not run");
        });

        assertThat(outcome.type()).isEqualTo(Outcome.Type.REJECTED);
    }

    @Test
    void copyAfterRetention_runsAgain() throws SQLException {
        JdbcInbox inbox = inboxBuilder().retention(Duration.ofHours(1)).build();
        inbox.handle(Delivery.of("p1"), pay("p1", 1, 10));
        clock.advance(Duration.ofHours(1).plusMillis(1));

        Outcome late = inbox.handle(Delivery.of("p1"), pay("p1", 1, 10));

        assertThat(late.type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(ledgerRows("p1")).isEqualTo(2);
    }

    // ---------------------------------------------------------------- concurrent copies

    /** A first copy of "p1" that has written its payment and keeps its transaction open until {@code release}. */
    private record HeldCopy(CompletableFuture<Outcome> outcome, CountDownLatch release) {}

    /** Starts the first copy; {@code ending} decides how it ends once released (answer, or throw). */
    private HeldCopy holdFirstCopy(JdbcInbox inbox, TransactionalHandler ending) throws InterruptedException {
        CountDownLatch wrote = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        CompletableFuture<Outcome> outcome = CompletableFuture.supplyAsync(() -> inbox.handle(Delivery.of("p1"), c -> {
            pay("p1", 1, 10).handle(c);
            wrote.countDown();
            release.await();
            return ending.handle(c);
        }));
        wrote.await();
        return new HeldCopy(outcome, release);
    }

    /** Starts the second copy of "p1" and checks it is blocked on the first copy's uncommitted mark. */
    private CompletableFuture<Outcome> blockedCopy(JdbcInbox inbox) {
        CompletableFuture<Outcome> copy =
                CompletableFuture.supplyAsync(() -> inbox.handle(Delivery.of("p1"), pay("p1", 1, 10)));
        await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(2)).until(() -> !copy.isDone());
        return copy;
    }

    @Test
    @Timeout(60)
    void copy_whileFirstIsUncommitted_waitsForIt_andIsDuplicate_afterItCommits() throws Exception {
        JdbcInbox inbox = inbox();
        HeldCopy first = holdFirstCopy(inbox, c -> Outcome.processed());
        CompletableFuture<Outcome> copy = blockedCopy(inbox);

        first.release().countDown();

        assertThat(first.outcome().get(30, TimeUnit.SECONDS).type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(copy.get(30, TimeUnit.SECONDS).type()).isEqualTo(Outcome.Type.DUPLICATE);
        assertThat(balance(1)).isEqualTo(INITIAL_BALANCE - 10);
        assertThat(ledgerRows("p1")).isEqualTo(1);
    }

    @Test
    @Timeout(60)
    void copy_whileFirstIsUncommitted_runs_afterTheFirstRollsBack() throws Exception {
        JdbcInbox inbox = inbox();
        HeldCopy first = holdFirstCopy(inbox, c -> {
            throw new IllegalStateException("first copy fails");
        });
        CompletableFuture<Outcome> copy = blockedCopy(inbox);

        first.release().countDown();

        assertThat(first.outcome().get(30, TimeUnit.SECONDS).type()).isEqualTo(Outcome.Type.FAILED);
        assertThat(copy.get(30, TimeUnit.SECONDS).type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(balance(1)).isEqualTo(INITIAL_BALANCE - 10);
        assertThat(ledgerRows("p1")).isEqualTo(1);
    }

    @Test
    @Timeout(60)
    void copy_whileFirstHoldsTheKeyLongerThanLockWait_isInProgress() throws Exception {
        JdbcInbox inbox = inboxBuilder().lockWait(Duration.ofSeconds(1)).build();
        HeldCopy first = holdFirstCopy(inbox, c -> Outcome.processed());

        Outcome copy = inbox.handle(Delivery.of("p1"), pay("p1", 1, 10));
        first.release().countDown();

        assertThat(copy.type()).isEqualTo(Outcome.Type.IN_PROGRESS);
        assertThat(first.outcome().get(30, TimeUnit.SECONDS).type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(inbox.handle(Delivery.of("p1"), pay("p1", 1, 10)).type()).isEqualTo(Outcome.Type.DUPLICATE);
        assertThat(ledgerRows("p1")).isEqualTo(1);
    }

    // ---------------------------------------------------------------- the caller's transaction

    @Test
    void joinedTransaction_leavesCommitToTheCaller_andCallerRollback_removesTheMark() throws SQLException {
        JdbcInbox inbox = inbox();
        try (Connection tx = db.connection()) {
            tx.setAutoCommit(false);
            Outcome outcome = inbox.handle(tx, Delivery.of("p1"), pay("p1", 1, 10));
            assertThat(outcome.type()).isEqualTo(Outcome.Type.PROCESSED);
            assertThat(marks()).as("not committed yet").isZero();
            tx.rollback();
        }
        assertThat(marks()).isZero();
        assertThat(balance(1)).isEqualTo(INITIAL_BALANCE);

        Outcome redelivered = inbox.handle(Delivery.of("p1"), pay("p1", 1, 10));

        assertThat(redelivered.type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(ledgerRows("p1")).isEqualTo(1);
    }

    @Test
    void joinedTransaction_committedByTheCaller_makesTheCopyADuplicate() throws SQLException {
        JdbcInbox inbox = inbox();
        try (Connection tx = db.connection()) {
            tx.setAutoCommit(false);
            inbox.handle(tx, Delivery.of("p1"), pay("p1", 1, 10));
            tx.commit();
        }

        assertThat(inbox.handle(Delivery.of("p1"), pay("p1", 1, 10)).type()).isEqualTo(Outcome.Type.DUPLICATE);
        assertThat(balance(1)).isEqualTo(INITIAL_BALANCE - 10);
    }

    @Test
    void joinedTransaction_duplicateAndFailedHandler_undoOnlyTheirOwnWork_andTheCallerCommitsTheRest()
            throws SQLException {
        JdbcInbox inbox = inbox();
        inbox.handle(Delivery.of("p1"), pay("p1", 1, 10));
        try (Connection tx = db.connection()) {
            tx.setAutoCommit(false);
            insertAudit(tx, "before");
            Outcome duplicate = inbox.handle(tx, Delivery.of("p1"), pay("p1", 1, 10));
            Outcome failed = inbox.handle(tx, Delivery.of("p2"), c -> {
                pay("p2", 2, 20).handle(c);
                throw new IllegalStateException("boom");
            });
            Outcome applied = inbox.handle(tx, Delivery.of("p3"), pay("p3", 3, 30));
            insertAudit(tx, "after");
            tx.commit();

            assertThat(duplicate.type()).isEqualTo(Outcome.Type.DUPLICATE);
            assertThat(failed.type()).isEqualTo(Outcome.Type.FAILED);
            assertThat(applied.type()).isEqualTo(Outcome.Type.PROCESSED);
        }
        assertThat(queryLong("SELECT COUNT(*) FROM audit")).isEqualTo(2);
        assertThat(balance(1)).isEqualTo(INITIAL_BALANCE - 10);
        assertThat(balance(2)).isEqualTo(INITIAL_BALANCE);
        assertThat(balance(3)).isEqualTo(INITIAL_BALANCE - 30);
        assertThat(marks()).isEqualTo(2);
    }

    @Test
    void joinedTransaction_inAutoCommitMode_isRefused() throws SQLException {
        try (Connection c = db.connection()) {
            c.setAutoCommit(true);
            assertThatThrownBy(() -> inbox().handle(c, Delivery.of("p1"), pay("p1", 1, 10)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("setAutoCommit(false)");
        }
    }

    private static void insertAudit(Connection c, String note) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO audit VALUES (?)")) {
            ps.setString(1, note);
            ps.executeUpdate();
        }
    }

    // ---------------------------------------------------------------- the batch handler

    /** Pays every context's payment with two JDBC batches: account {@code index}, amount {@code index + 1}. */
    private static List<Outcome> payInJdbcBatches(Connection c, List<HandlingContext> fresh) throws SQLException {
        try (PreparedStatement debit = c.prepareStatement("UPDATE accounts SET balance = balance - ? WHERE id = ?");
                PreparedStatement ledger = c.prepareStatement("INSERT INTO ledger VALUES (?, ?, ?)")) {
            for (HandlingContext context : fresh) {
                debit.setLong(1, context.index() + 1);
                debit.setInt(2, context.index());
                debit.addBatch();
                ledger.setString(1, context.delivery().key());
                ledger.setInt(2, context.index());
                ledger.setLong(3, context.index() + 1);
                ledger.addBatch();
            }
            debit.executeBatch();
            ledger.executeBatch();
        }
        return Collections.nCopies(fresh.size(), Outcome.processed());
    }

    /**
     * Issue 24 review: PostgreSQL's batch of marks sends the ids and fingerprints as array literals. Keys and
     * fingerprints that an array literal must quote (NULL, quotes, backslashes, braces, commas, blanks) and keys that
     * differ only in case or a trailing blank are each their own key, stored as given.
     */
    @Test
    void batchOfKeysAndFingerprintsThatArraysMustQuote_marksEachAsGiven() throws SQLException {
        JdbcInbox inbox = inbox();
        List<String> keys = List.of("NULL", "null", "a\"b", "a\\b", "{x,y}", "k", "k ", " k", "K", "é ü");
        List<String> prints = List.of("NULL", "\"", "\\", "{}", ",", "x y".replace(' ', '~'), "a", "b", "c", "d");
        List<Delivery> batch = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
            batch.add(Delivery.of(keys.get(i), prints.get(i)));
        }

        assertThat(inbox.handleBatch(batch, (c, fresh) -> Collections.nCopies(fresh.size(), Outcome.processed())))
                .extracting(Outcome::type)
                .containsOnly(Outcome.Type.PROCESSED);
        assertThat(marks()).isEqualTo(keys.size());
        for (int i = 0; i < keys.size(); i++) {
            try (Connection c = db.connection();
                    PreparedStatement ps = c.prepareStatement("SELECT fingerprint FROM idem_keys WHERE id = ?")) {
                ps.setString(1, IdempotencyKey.of(namespace, keys.get(i)).storageId());
                try (java.sql.ResultSet rs = ps.executeQuery()) {
                    assertThat(rs.next()).as("mark of %s", keys.get(i)).isTrue();
                    assertThat(rs.getString(1))
                            .as("fingerprint of %s", keys.get(i))
                            .isEqualTo(prints.get(i));
                }
            }
        }
        assertThat(inbox.handleBatch(batch, (c, fresh) -> {
                    throw new AssertionError("every key is a duplicate: the handler must not run");
                }))
                .extracting(Outcome::type)
                .containsOnly(Outcome.Type.DUPLICATE);
    }

    private static List<Delivery> deliveries(String... keys) {
        return Arrays.stream(keys).map(Delivery::of).toList();
    }

    private void assertPaid(int index, boolean paid) throws SQLException {
        assertThat(balance(index))
                .as("balance of account %d", index)
                .isEqualTo(INITIAL_BALANCE - (paid ? index + 1 : 0));
    }

    @Test
    void batchHandler_getsEveryNewDeliveryInOneCall_withItsIndex_andNeverADuplicate() throws SQLException {
        JdbcInbox inbox = inbox();
        inbox.handle(Delivery.of("b"), c -> Outcome.processed());
        List<List<Integer>> calls = new ArrayList<>();

        List<Outcome> outcomes = inbox.handleBatch(deliveries("a", "b", "c", "a", "d"), (c, fresh) -> {
            calls.add(fresh.stream().map(HandlingContext::index).toList());
            return payInJdbcBatches(c, fresh);
        });

        assertThat(calls).containsExactly(List.of(0, 2, 4));
        assertThat(outcomes)
                .extracting(Outcome::type)
                .containsExactly(
                        Outcome.Type.PROCESSED,
                        Outcome.Type.DUPLICATE,
                        Outcome.Type.PROCESSED,
                        Outcome.Type.DUPLICATE,
                        Outcome.Type.PROCESSED);
        assertPaid(0, true);
        assertPaid(2, true);
        assertPaid(4, true);
        assertThat(queryLong("SELECT COUNT(*) FROM ledger")).isEqualTo(3);
        assertThat(inbox.handleBatch(deliveries("a", "c", "d"), (c, fresh) -> {
                    throw new AssertionError("every key is a duplicate: the handler must not run");
                }))
                .extracting(Outcome::type)
                .containsOnly(Outcome.Type.DUPLICATE);
    }

    @Test
    void batchHandler_throwingBecauseOfOneDelivery_failsThatOneAlone_andCommitsTheOthersOnce() throws SQLException {
        JdbcInbox inbox = inbox();
        List<String> keys = List.of("k0", "k1", "k2", "k3", "poison", "k5", "k6", "k7", "k8");
        AtomicInteger calls = new AtomicInteger();

        List<Outcome> outcomes = inbox.handleBatch(deliveries(keys.toArray(String[]::new)), (c, fresh) -> {
            calls.incrementAndGet();
            List<Outcome> answers = payInJdbcBatches(c, fresh); // written, then thrown away with the transaction
            if (fresh.stream().anyMatch(context -> context.delivery().key().equals("poison"))) {
                throw new DeadLetterException("poison cannot be paid", null);
            }
            return answers;
        });

        for (int i = 0; i < keys.size(); i++) {
            boolean poison = keys.get(i).equals("poison");
            assertThat(outcomes.get(i).type())
                    .as(keys.get(i))
                    .isEqualTo(poison ? Outcome.Type.REJECTED : Outcome.Type.PROCESSED);
            assertPaid(i, !poison);
            assertThat(ledgerRows(keys.get(i))).isEqualTo(poison ? 0 : 1);
        }
        assertThat(outcomes.get(4).reason()).contains("poison cannot be paid");
        assertThat(marks()).isEqualTo(keys.size() - 1);
        assertThat(calls.get()).as("bisected, not one call per delivery").isLessThan(2 * keys.size());
    }

    @Test
    void batchHandler_answeringNotFinalForOne_rollsItBack_andRerunsTheRestWithoutIt() throws SQLException {
        JdbcInbox inbox = inbox();
        List<List<Integer>> calls = new ArrayList<>();

        List<Outcome> outcomes = inbox.handleBatch(deliveries("a", "b", "c"), (c, fresh) -> {
            calls.add(fresh.stream().map(HandlingContext::index).toList());
            List<Outcome> answers = new ArrayList<>(payInJdbcBatches(c, fresh));
            for (int i = 0; i < fresh.size(); i++) {
                if (fresh.get(i).index() == 1) {
                    answers.set(i, Outcome.outOfOrder("b waits for its predecessor"));
                }
            }
            return answers;
        });

        assertThat(calls).containsExactly(List.of(0, 1, 2), List.of(0, 2));
        assertThat(outcomes)
                .extracting(Outcome::type)
                .containsExactly(Outcome.Type.PROCESSED, Outcome.Type.OUT_OF_ORDER, Outcome.Type.PROCESSED);
        assertPaid(0, true);
        assertPaid(1, false);
        assertPaid(2, true);
        assertThat(queryLong("SELECT COUNT(*) FROM ledger")).isEqualTo(2);
        assertThat(marks()).isEqualTo(2);
    }

    @Test
    void batchHandler_answeringAListOfAnotherSize_failsItsDeliveries_namingTheMistake_andCommitsNothing()
            throws SQLException {
        JdbcInbox inbox = inbox();
        inbox.handle(Delivery.of("b"), c -> Outcome.processed());

        List<Outcome> outcomes = inbox.handleBatch(
                deliveries("a", "b", "c"),
                (c, fresh) -> payInJdbcBatches(c, fresh).subList(0, 1));

        assertThat(outcomes)
                .extracting(Outcome::type)
                .containsExactly(Outcome.Type.FAILED, Outcome.Type.DUPLICATE, Outcome.Type.FAILED);
        assertThat(outcomes.get(0).reason()).contains("programming error", "1 outcomes for 2 deliveries");
        assertThat(queryLong("SELECT COUNT(*) FROM ledger")).isZero();
        assertPaid(0, false);
        assertThat(marks()).isEqualTo(1);
    }

    @Test
    void batchHandler_throwingAnError_commitsNothing_andTheRedeliveryRuns() throws SQLException {
        JdbcInbox inbox = inbox();

        assertThatThrownBy(() -> inbox.handleBatch(deliveries("a", "b"), (c, fresh) -> {
                    payInJdbcBatches(c, fresh);
                    throw new OutOfMemoryError("simulated");
                }))
                .isInstanceOf(OutOfMemoryError.class);

        assertThat(queryLong("SELECT COUNT(*) FROM ledger")).isZero();
        assertThat(marks()).isZero();
        assertThat(inbox.handleBatch(deliveries("a", "b"), InboxTestBase::payInJdbcBatches))
                .extracting(Outcome::type)
                .containsOnly(Outcome.Type.PROCESSED);
        assertPaid(0, true);
        assertPaid(1, true);
    }

    @Test
    void joinedBatch_undoesOnlyTheFailedDelivery_andLeavesTheCommitToTheCaller() throws SQLException {
        JdbcInbox inbox = inbox();
        inbox.handle(Delivery.of("b"), c -> Outcome.processed());
        List<Outcome> outcomes;
        try (Connection tx = db.connection()) {
            tx.setAutoCommit(false);
            insertAudit(tx, "before");
            outcomes = inbox.handleBatch(tx, deliveries("a", "b", "c", "d"), (c, fresh) -> {
                assertThat(c).isSameAs(tx);
                List<Outcome> answers = payInJdbcBatches(c, fresh);
                if (fresh.stream().anyMatch(context -> context.index() == 2)) {
                    throw new IllegalStateException("c fails");
                }
                return answers;
            });
            insertAudit(tx, "after");
            assertThat(marks()).as("nothing visible before the caller commits").isEqualTo(1);
            tx.commit();
        }

        assertThat(outcomes)
                .extracting(Outcome::type)
                .containsExactly(
                        Outcome.Type.PROCESSED, Outcome.Type.DUPLICATE, Outcome.Type.FAILED, Outcome.Type.PROCESSED);
        assertThat(outcomes.get(2).reason()).contains("c fails");
        assertPaid(0, true);
        assertPaid(2, false);
        assertPaid(3, true);
        assertThat(queryLong("SELECT COUNT(*) FROM audit")).isEqualTo(2);
        assertThat(marks()).isEqualTo(3);
    }

    // ---------------------------------------------------------------- batches

    @Test
    void batch_skipsDuplicates_undoesTheFailedOneAlone_andAnswersInInputOrder() throws SQLException {
        JdbcInbox inbox = inbox();
        inbox.handle(Delivery.of("b"), pay("b", 2, 20));

        List<Outcome> outcomes = handleEach(
                inbox,
                message("c", null, pay("c", 3, 30)),
                message("b", null, pay("b", 2, 20)),
                message("a", null, c -> {
                    pay("a", 1, 10).handle(c);
                    throw new IllegalStateException("a fails");
                }),
                message("c", null, pay("c", 3, 30)),
                message("d", "fp-1", pay("d", 4, 40)),
                message("d", "fp-2", pay("d", 4, 40)));

        assertThat(outcomes)
                .extracting(Outcome::type)
                .containsExactly(
                        Outcome.Type.PROCESSED,
                        Outcome.Type.DUPLICATE,
                        Outcome.Type.FAILED,
                        Outcome.Type.DUPLICATE,
                        Outcome.Type.PROCESSED,
                        Outcome.Type.REJECTED);
        assertThat(balance(1)).isEqualTo(INITIAL_BALANCE);
        assertThat(balance(2)).isEqualTo(INITIAL_BALANCE - 20);
        assertThat(balance(3)).isEqualTo(INITIAL_BALANCE - 30);
        assertThat(balance(4)).isEqualTo(INITIAL_BALANCE - 40);
        assertThat(inbox.handle(Delivery.of("a"), pay("a", 1, 10)).type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(ledgerRows("a")).isEqualTo(1);
    }

    @Test
    @Timeout(120)
    void concurrentOverlappingBatches_applyEachKeyOnce() throws Exception {
        JdbcInbox inbox = inbox();
        int threads = 4;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> workers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int seed = t;
                workers.add(pool.submit(() -> {
                    Random random = new Random(seed);
                    for (int round = 0; round < 10; round++) {
                        List<Integer> keys = new ArrayList<>();
                        for (int k = 0; k < 100; k++) {
                            keys.add(k);
                        }
                        Collections.shuffle(keys, random);
                        List<Integer> batch = keys.subList(0, 50);
                        inbox.handleBatch(
                                batch.stream().map(k -> Delivery.of("k" + k)).toList(),
                                BatchHandler.eachOf(i -> pay("k" + batch.get(i), batch.get(i), batch.get(i) + 1)));
                    }
                    return null;
                }));
            }
            for (Future<?> w : workers) {
                w.get(110, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        for (int k = 0; k < 100; k++) {
            assertThat(ledgerRows("k" + k)).as("ledger rows of k%d", k).isLessThanOrEqualTo(1);
            assertThat(balance(k)).isEqualTo(INITIAL_BALANCE - (k + 1) * ledgerRows("k" + k));
        }
        assertThat(marks()).isEqualTo(queryLong("SELECT COUNT(*) FROM ledger"));
    }

    // ---------------------------------------------------------------- purge

    @Test
    void purge_removesExpiredCompletionsAndClaims_inSmallBatches_andLeavesLiveOnesAlone() throws SQLException {
        db.execute("DELETE FROM idem_keys");
        JdbcStore store = JdbcStore.builder(db.dataSource())
                .clock(clock)
                .purgeBatchSize(2)
                .build();
        for (int i = 0; i < 5; i++) {
            claimAndComplete(store, "old-" + i, Duration.ofHours(1));
        }
        claimAndComplete(store, "young", Duration.ofHours(10));
        store.claim(ClaimRequest.of(IdempotencyKey.of(namespace, "crashed"), "o", Duration.ofMinutes(1)));
        store.claim(ClaimRequest.of(IdempotencyKey.of(namespace, "running"), "o", Duration.ofHours(10)));
        inbox().handle(Delivery.of("inbox-old"), pay("inbox-old", 1, 1));
        clock.advance(Duration.ofDays(8));
        inbox().handle(Delivery.of("inbox-young"), pay("inbox-young", 1, 1));
        clock.advance(Duration.ofHours(-8 * 24).plusHours(2));

        int purged = store.purgeExpired();

        assertThat(purged).as("five old completions and the crashed claim").isEqualTo(6);
        assertThat(queryLong("SELECT COUNT(*) FROM idem_keys")).isEqualTo(4);
        clock.advance(Duration.ofDays(8));
        assertThat(inboxBuilder().purgeBatchSize(1).build().purgeExpired())
                .as("young, running (its lease ended) and inbox-old")
                .isEqualTo(3);
        assertThat(queryLong("SELECT COUNT(*) FROM idem_keys"))
                .as("inbox-young")
                .isEqualTo(1);
    }

    @Test
    @Timeout(30)
    void scheduledPurge_removesExpiredCompletions() throws Exception {
        db.execute("DELETE FROM idem_keys");
        JdbcStore store = JdbcStore.builder(db.dataSource()).clock(clock).build();
        claimAndComplete(store, "old", Duration.ofHours(1));
        clock.advance(Duration.ofHours(2));
        ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor();
        try {
            store.schedulePurge(scheduler, Duration.ofMillis(50));
            await().atMost(Duration.ofSeconds(10)).until(() -> queryLong("SELECT COUNT(*) FROM idem_keys") == 0);
        } finally {
            scheduler.shutdownNow();
        }
    }

    private void claimAndComplete(JdbcStore store, String key, Duration retention) {
        IdempotencyKey k = IdempotencyKey.of(namespace, key);
        store.claim(ClaimRequest.of(k, "o", Duration.ofMinutes(1)));
        store.complete(k, "o", null, retention);
    }

    // ---------------------------------------------------------------- configuration

    @Test
    void databaseClock_decidesLeaseDeadlines_whateverTheLocalClockSays() {
        JdbcStore store = JdbcStore.builder(db.dataSource())
                .clock(MutableClock.at(Instant.parse("2001-01-01T00:00:00Z")))
                .useDatabaseClock(true)
                .build();

        var claimed = (ClaimResult.Claimed)
                store.claim(ClaimRequest.of(IdempotencyKey.of(namespace, "k"), "o", Duration.ofMinutes(1)));

        assertThat(claimed.leaseUntil())
                .isBetween(Instant.now().plusSeconds(50), Instant.now().plusSeconds(70));
    }

    @Test
    void dialect_isDetectedFromTheConnection() {
        String expected = switch (db.engine()) {
            case POSTGRESQL -> "postgresql";
            case MARIADB -> "mariadb";
            case H2 -> "h2";
        };
        assertThat(JdbcStore.builder(db.dataSource()).build().describe()).startsWith(expected + " idem_keys");
    }

    @Test
    void tableName_thatIsNotAPlainIdentifier_isRefused() {
        assertThatThrownBy(() -> JdbcStore.builder(db.dataSource()).table("idem; DROP TABLE accounts"))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("not allowed");
        assertThatThrownBy(() -> inboxBuilder().table("x".repeat(49))).isInstanceOf(ConfigurationException.class);
    }

    @Test
    void retentionAndLockWait_outsideWhatTheInboxCanKeep_areRefused_namingTheBounds() {
        assertThatThrownBy(() -> inboxBuilder().retention(Duration.ofNanos(500_000)))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("retention must be at least 1 ms");
        assertThatThrownBy(() -> inboxBuilder().retention(Duration.ofDays(36_501)))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("retention must be at most 36500 days");
        assertThatThrownBy(() -> inboxBuilder().lockWait(Duration.ofSeconds(Integer.MAX_VALUE + 1L)))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("lockWait must be at most 1 day");
        assertThatThrownBy(() -> inboxBuilder().lockWait(Duration.ZERO))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("lockWait must be a positive duration");
    }

    @Test
    void missingTable_isAConfigurationError_namingTheDdl() {
        JdbcStore store =
                JdbcStore.builder(db.dataSource()).table("not_created").build();
        JdbcInbox inbox = inboxBuilder().table("not_created").build();

        assertThatThrownBy(() ->
                        store.claim(ClaimRequest.of(IdempotencyKey.of(namespace, "k"), "o", Duration.ofMinutes(1))))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("/dev/idem/jdbc/ddl/");
        assertThatThrownBy(() -> inbox.handle(Delivery.of("k"), pay("k", 1, 1)))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("createTableIfMissing");
    }

    @Test
    void createTableIfMissing_createsAWorkingTable_underAnotherName_andIsIdempotent() {
        JdbcStore.builder(db.dataSource())
                .table("other_keys")
                .createTableIfMissing(true)
                .build();
        JdbcInbox inbox =
                inboxBuilder().table("other_keys").createTableIfMissing(true).build();

        assertThat(inbox.handle(Delivery.of("k"), c -> Outcome.processed()).type())
                .isEqualTo(Outcome.Type.PROCESSED);
        assertThat(inbox.handle(Delivery.of("k"), c -> Outcome.processed()).type())
                .isEqualTo(Outcome.Type.DUPLICATE);
    }
}
