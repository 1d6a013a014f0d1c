package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.testsupport.TestDatabase;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.lang.reflect.Proxy;
import java.net.URL;
import java.net.URLClassLoader;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Review of ec46666: on PostgreSQL the inbox's and the lease store's lock waits are bounded by {@link
 * StatementWatcher#SHARED} (one thread, started on demand, ending when idle) instead of pgjdbc's query timeout (a task
 * on the driver's shared {@code java.util.Timer}). Each test is one way the watcher is worse than the driver's timer.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class LockWaitWatcherReviewTest {
    private static TestDatabase db;

    @BeforeAll
    static void open() {
        db = TestDatabase.postgres("LockWaitWatcherReviewTest");
        db.execute("CREATE TABLE held (id int PRIMARY KEY)");
        db.execute("INSERT INTO held VALUES (1)");
    }

    @AfterAll
    static void close() {
        db.close();
    }

    /**
     * Scenario: the first statement to be bounded after the watcher went idle runs when starting a thread fails
     * ({@code OutOfMemoryError: unable to create native thread}, as {@code Thread.start} throws when a container's
     * pids limit or {@code ulimit -u} is momentarily reached by a burst of threads). {@code watch} set {@code running
     * = true} before creating and starting the thread and never cleared it, so no thread was ever started again in
     * this JVM: every later lock wait of every inbox and lease store was silently unbounded (a copy racing its
     * original's uncommitted mark waited until the original committed: 8 s in the review, for ever with a stuck
     * original, and answered {@code DUPLICATE} instead of {@code IN_PROGRESS}).
     *
     * <p>Expected: the statement registered while no thread can start is bounded by the driver's query timeout, and
     * the next one, once threads start again, by the watcher: each fails with {@code 57014} after about its bound.
     */
    @Test
    @Order(1)
    void aWatcherThreadThatFailedToStartOnce_leavesNoLockWaitUnbounded() throws Exception {
        AtomicInteger starts = new AtomicInteger();
        StatementWatcher watcher = new StatementWatcher(Duration.ofMillis(50), Duration.ofSeconds(30), work -> {
            if (starts.getAndIncrement() == 0) {
                throw new OutOfMemoryError(
                        "unable to create native thread: possibly out of memory or process/resource limits reached");
            }
            Thread thread = new Thread(work, "review-watcher");
            thread.setDaemon(true);
            return thread;
        });

        LockWaitResult whileNoThreadStarts = waitForHeldRow(watcher, 1);
        LockWaitResult afterwards = waitForHeldRow(watcher, 1);

        assertThat(whileNoThreadStarts.sqlState)
                .as("while no thread starts, after " + whileNoThreadStarts.waited.toMillis() + " ms")
                .isEqualTo("57014");
        assertThat(whileNoThreadStarts.waited).isLessThan(Duration.ofSeconds(4));
        assertThat(afterwards.sqlState)
                .as("once threads start again, after " + afterwards.waited.toMillis() + " ms")
                .isEqualTo("57014");
        assertThat(afterwards.waited).isLessThan(Duration.ofSeconds(4));
        assertThat(watcher.running()).isTrue();
    }

    /**
     * Scenario: cancelling one statement past its bound throws an {@link Error} on the watcher thread, e.g. {@code
     * OutOfMemoryError} while pgjdbc allocates the cancel request's stream under heap pressure, or {@code
     * NoClassDefFoundError} from a cancel class not yet loaded after the web application that loaded pgjdbc was
     * stopped (Idem in a shared class loader). {@code cancel} catches only {@code SQLException} and {@code
     * RuntimeException}: the thread dies with {@code running} still true, and no thread is started again. A later
     * statement waits for a row lock another transaction holds.
     *
     * <p>Expected: the later statement is cancelled after its bound (1 s) with {@code 57014}. Observed: it is never
     * cancelled; it waits until the server's own lock_timeout this test sets as a safety net (6 s, {@code 55P03});
     * without it, for as long as the lock is held. (pgjdbc's timer thread dies too, but then every later {@code
     * schedule} throws "Timer already cancelled": statements fail loudly instead of waiting unbounded.)
     */
    @Test
    @Order(2)
    void anErrorThrownByOneCancel_killsTheWatcher_andLaterLockWaitsAreNeverBounded() throws Exception {
        StatementWatcher watcher = new StatementWatcher(Duration.ofMillis(50), Duration.ofSeconds(30));
        CountDownLatch thrown = new CountDownLatch(1);
        Statement failing = statement(() -> {
            thrown.countDown();
            throw new OutOfMemoryError("Java heap space");
        });
        try (LockWait bound = watcher.watch(failing, Duration.ofMillis(10))) {
            assertThat(thrown.await(5, TimeUnit.SECONDS)).isTrue();
        }

        LockWaitResult result = waitForHeldRow(watcher, 1);

        assertThat(result.sqlState)
                .as("the lock wait's failure, after " + result.waited.toMillis() + " ms")
                .isEqualTo("57014");
        assertThat(result.waited).isLessThan(Duration.ofSeconds(4));
    }

    /**
     * Scenario: the watcher thread is interrupted once (a container or framework interrupting the threads it finds
     * at shutdown or redeploy, a diagnostic tool, ...). {@code LockSupport.parkNanos} returns at once while the
     * interrupt status is set, and nothing clears it: the watcher spins on a core for as long as anything is watched
     * (under steady traffic: for ever), re-scanning the set and calling {@code System.nanoTime} in a tight loop.
     *
     * <p>Expected: a watcher watching one statement costs next to no CPU (it looks every 50 ms), interrupted or not;
     * pgjdbc's timer thread swallows an interrupt ({@code TimerThread.mainLoop} catches {@code InterruptedException}
     * and waits again). Observed: the watcher thread burns about a whole core.
     */
    @Test
    @Order(3)
    void anInterruptedWatcher_spinsOnACore_whileAnythingIsWatched() throws Exception {
        StatementWatcher watcher = new StatementWatcher(Duration.ofMillis(50), Duration.ofSeconds(2));
        AtomicReference<Thread> watcherThread = new AtomicReference<>();
        Statement probe = statement(() -> watcherThread.set(Thread.currentThread()));
        watcher.watch(probe, Duration.ofMillis(1));
        await().atMost(Duration.ofSeconds(5)).until(() -> watcherThread.get() != null);
        Thread thread = watcherThread.get();
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();

        try (LockWait longStatement = watcher.watch(statement(() -> {}), Duration.ofMinutes(1))) {
            thread.interrupt();
            long cpuBefore = threads.getThreadCpuTime(thread.getId());
            Thread.sleep(1000);
            long cpu = threads.getThreadCpuTime(thread.getId()) - cpuBefore;

            assertThat(Duration.ofNanos(cpu))
                    .as("the watcher's CPU time over one second, watching one statement")
                    .isLessThan(Duration.ofMillis(200));
        }
    }

    /**
     * Scenario: a consumer thread whose context class loader is a web application's (or any plug-in's) registers the
     * first statement after the watcher went idle. The watcher's thread is created by that consumer thread and
     * inherits its context class loader (and its inheritable thread locals), and it lives as long as statements keep
     * coming, from every application sharing Idem's class loader: the application's class loader stays reachable
     * after it is undeployed (a metaspace leak per redeploy). pgjdbc's {@code SharedTimer} creates its timer thread
     * with a {@code null} context class loader precisely to avoid this.
     *
     * <p>Expected: the watcher thread does not hold the registering thread's context class loader. Observed: it does.
     */
    @Test
    @Order(4)
    void theWatcherThread_inheritsTheRegisteringThreadsContextClassLoader() throws Exception {
        StatementWatcher watcher = new StatementWatcher(Duration.ofMillis(50), Duration.ofMillis(200));
        AtomicReference<ClassLoader> seen = new AtomicReference<>();
        CountDownLatch cancelled = new CountDownLatch(1);
        Statement probe = statement(() -> {
            seen.set(Thread.currentThread().getContextClassLoader());
            cancelled.countDown();
        });
        ClassLoader webApplication = new URLClassLoader("web-application", new URL[0], null);
        Thread current = Thread.currentThread();
        ClassLoader previous = current.getContextClassLoader();
        current.setContextClassLoader(webApplication);
        try {
            watcher.watch(probe, Duration.ofMillis(1));
        } finally {
            current.setContextClassLoader(previous);
        }
        assertThat(cancelled.await(5, TimeUnit.SECONDS)).isTrue();

        assertThat(seen.get()).as("the watcher thread's context class loader").isNotSameAs(webApplication);
    }

    // ---------------------------------------------------------------- support

    private record LockWaitResult(String sqlState, Duration waited) {}

    /** Waits, bounded by {@code watcher}, for the row another transaction holds; the server gives up after 6 s. */
    private static LockWaitResult waitForHeldRow(StatementWatcher watcher, int boundSeconds) throws Exception {
        try (Connection holder = db.connection();
                Connection waiter = db.connection()) {
            holder.setAutoCommit(false);
            try (Statement s = holder.createStatement()) {
                s.execute("SELECT id FROM held WHERE id = 1 FOR UPDATE");
            }
            waiter.setAutoCommit(false);
            try (Statement s = waiter.createStatement()) {
                s.execute("SET LOCAL lock_timeout = '6s'");
            }
            long start = System.nanoTime();
            String sqlState = null;
            try (PreparedStatement ps = waiter.prepareStatement("SELECT id FROM held WHERE id = 1 FOR UPDATE");
                    LockWait b = LockWait.bound(watcher, Dialect.POSTGRESQL, ps, Duration.ofSeconds(boundSeconds))) {
                ps.executeQuery().close();
            } catch (SQLException e) {
                sqlState = e.getSQLState();
            }
            Duration waited = Duration.ofNanos(System.nanoTime() - start);
            waiter.rollback();
            holder.rollback();
            return new LockWaitResult(sqlState, waited);
        }
    }

    private interface OnCancel {
        void run() throws Exception;
    }

    /** A statement whose only call is {@code cancel}, which runs {@code onCancel}. */
    private static Statement statement(OnCancel onCancel) {
        return (Statement) Proxy.newProxyInstance(
                LockWaitWatcherReviewTest.class.getClassLoader(), new Class<?>[] {Statement.class}, (self, m, args) -> {
                    if (m.getName().equals("cancel")) {
                        onCancel.run();
                        return null;
                    }
                    throw new UnsupportedOperationException(m.getName());
                });
    }
}
