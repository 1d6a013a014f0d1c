package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.lang.reflect.Proxy;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class StatementWatcherTest {
    private static final Duration TICK = Duration.ofMillis(5);

    private final StatementWatcher watcher = new StatementWatcher(TICK, Duration.ofMillis(100));

    @Test
    void aStatementStillRunningAtItsDeadline_isCancelled_once() {
        CountingStatement running = new CountingStatement();

        try (LockWait bound = watcher.watch(running.statement, Duration.ofMillis(50))) {
            await().atMost(Duration.ofSeconds(5)).until(() -> running.cancels.get() == 1);
            sleep(TICK.multipliedBy(10));
        }

        assertThat(running.cancels).hasValue(1);
    }

    @Test
    void aStatementDoneBeforeItsDeadline_isNeverCancelled() {
        CountingStatement done = new CountingStatement();
        CountingStatement running = new CountingStatement();

        watcher.watch(done.statement, Duration.ofMillis(50)).close();
        try (LockWait bound = watcher.watch(running.statement, Duration.ofMillis(50))) {
            await().atMost(Duration.ofSeconds(5)).until(() -> running.cancels.get() == 1);
        }

        assertThat(done.cancels).hasValue(0);
    }

    @Test
    void eachStatementIsCancelledAtItsOwnDeadline() {
        CountingStatement soon = new CountingStatement();
        CountingStatement late = new CountingStatement();

        try (LockWait lateBound = watcher.watch(late.statement, Duration.ofMinutes(1));
                LockWait soonBound = watcher.watch(soon.statement, Duration.ofMillis(20))) {
            await().atMost(Duration.ofSeconds(5)).until(() -> soon.cancels.get() == 1);
            sleep(TICK.multipliedBy(10));
            assertThat(late.cancels).hasValue(0);
        }
    }

    @Test
    void aCancelThatFails_doesNotStopTheWatcher() {
        CountingStatement failing = new CountingStatement(new SQLException("connection is closed"));
        CountingStatement running = new CountingStatement();

        try (LockWait failingBound = watcher.watch(failing.statement, Duration.ofMillis(10))) {
            await().atMost(Duration.ofSeconds(5)).until(() -> failing.cancels.get() == 1);
        }
        try (LockWait bound = watcher.watch(running.statement, Duration.ofMillis(10))) {
            await().atMost(Duration.ofSeconds(5)).until(() -> running.cancels.get() == 1);
        }
    }

    @Test
    void theThreadEndsWhenIdle_andTheNextStatementIsWatchedAgain() {
        watcher.watch(new CountingStatement().statement, Duration.ofMinutes(1)).close();
        await().atMost(Duration.ofSeconds(5)).until(() -> !watcher.running());
        CountingStatement running = new CountingStatement();

        try (LockWait bound = watcher.watch(running.statement, Duration.ofMillis(10))) {
            assertThat(watcher.running()).isTrue();
            await().atMost(Duration.ofSeconds(5)).until(() -> running.cancels.get() == 1);
        }
    }

    /** A statement whose only call is {@link Statement#cancel()}, counted (and failing with {@code failure}). */
    private static final class CountingStatement {
        final AtomicInteger cancels = new AtomicInteger();
        final Statement statement;

        CountingStatement() {
            this(null);
        }

        CountingStatement(SQLException failure) {
            statement = (Statement) Proxy.newProxyInstance(
                    getClass().getClassLoader(), new Class<?>[] {Statement.class}, (self, method, args) -> {
                        if (method.getName().equals("cancel")) {
                            cancels.incrementAndGet();
                            if (failure != null) {
                                throw failure;
                            }
                            return null;
                        }
                        throw new UnsupportedOperationException(method.getName());
                    });
        }
    }

    private static void sleep(Duration duration) {
        try {
            Thread.sleep(duration.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
