package dev.idem.testkit;

import dev.idem.DeadLetterException;
import dev.idem.Outcome;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * The database behind the {@link AdapterContract}'s handler: an in-memory transactional inbox. A handling of a key
 * runs as one transaction that holds the key (a second handling of it meanwhile answers {@code IN_PROGRESS}), applies
 * the effect and the mark together at its end, and leaves nothing behind when it throws. So a redelivery after the
 * effect committed answers {@code DUPLICATE}, and an effect is counted once per commit: {@link #effects(String)} is
 * the exactly-once verdict.
 *
 * <p>The payload is the handler's script, as text:
 *
 * <ul>
 *   <li>{@code apply} (or anything not below): apply the effect;
 *   <li>{@code fail}: throw (the handler's failure) on every attempt until {@link #fix(String)}; {@code fail:N}: on the
 *       first N attempts;
 *   <li>{@code reject}: throw a {@link DeadLetterException} (a poison message);
 *   <li>{@code needs:K}: answer {@code OUT_OF_ORDER} until key K has been applied;
 *   <li>{@code hold}: block inside the transaction until {@link #releaseHolds()};
 *   <li>{@code hold-after}: commit, then block before returning (before the broker's ack) until released.
 * </ul>
 *
 * {@link #beUnreachable()} makes every handling fail as a database that refuses connections does; {@link
 * #endSessionsMidMethod()} as one that ends every session inside the handler (a restart loop, a failover).
 *
 * <p>Thread-safe.
 */
public final class ContractLedger {
    /** How the database behaves. */
    enum Health {
        UP,
        UNREACHABLE,
        ENDS_SESSIONS
    }

    private final Set<String> open = ConcurrentHashMap.newKeySet();
    private final Set<String> applied = ConcurrentHashMap.newKeySet();
    private final Set<String> fixed = ConcurrentHashMap.newKeySet();
    private final Map<String, AtomicInteger> effects = new ConcurrentHashMap<>();
    private final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
    private final Map<String, AtomicInteger> contended = new ConcurrentHashMap<>();
    private final Map<String, AtomicInteger> interrupted = new ConcurrentHashMap<>();
    private final List<String> order = new CopyOnWriteArrayList<>();
    private final AtomicInteger holding = new AtomicInteger();
    private volatile Health health = Health.UP;
    private volatile CountDownLatch holds = new CountDownLatch(1);

    /** The handler body for one delivery of {@code key}: what a user's handler on a transactional database does. */
    public Outcome handle(String key, byte[] payload) throws Exception {
        count(calls, key);
        String script = new String(payload, StandardCharsets.UTF_8);
        if (health == Health.UNREACHABLE) {
            throw new SQLTransientConnectionException(
                    "Connection refused (contract: the database is unreachable)", "08001");
        }
        if (!open.add(key)) {
            count(contended, key);
            return Outcome.inProgress("another transaction holds " + key, null);
        }
        try {
            if (applied.contains(key)) {
                return Outcome.duplicate("already applied");
            }
            Outcome early = runScript(key, script);
            if (early != null) {
                return early;
            }
            if (health == Health.ENDS_SESSIONS) {
                throw new SQLException("terminating connection due to administrator command", "57P01");
            }
            applied.add(key);
            count(effects, key);
            order.add(key);
        } finally {
            open.remove(key);
        }
        if (script.equals("hold-after")) {
            awaitRelease(key);
        }
        return Outcome.processed();
    }

    private @Nullable Outcome runScript(String key, String script) throws Exception {
        if ((script.equals("fail") && !fixed.contains(key))
                || (script.startsWith("fail:") && calls(key) <= Integer.parseInt(script.substring(5)))) {
            throw new IllegalStateException("scripted failure of " + key);
        }
        if (script.equals("reject")) {
            throw new DeadLetterException("scripted rejection: " + key + " can never be handled", null);
        }
        if (script.startsWith("needs:") && !applied.contains(script.substring(6))) {
            return Outcome.outOfOrder(key + " waits for " + script.substring(6));
        }
        if (script.equals("hold")) {
            awaitRelease(key);
        }
        return null;
    }

    private void awaitRelease(String key) throws InterruptedException {
        CountDownLatch release = holds;
        holding.incrementAndGet();
        try {
            if (!release.await(2, TimeUnit.MINUTES)) {
                throw new IllegalStateException("contract: a held handler of " + key + " was never released");
            }
        } catch (InterruptedException e) {
            count(interrupted, key);
            throw e;
        } finally {
            holding.decrementAndGet();
        }
    }

    /** How many handlings are blocked in a {@code hold} or {@code hold-after} script right now. */
    public int holding() {
        return holding.get();
    }

    /** Lets every held handling go on; later holds block again. */
    public void releaseHolds() {
        CountDownLatch released = holds;
        holds = new CountDownLatch(1);
        released.countDown();
    }

    /** Holds {@code key} as a transaction of another consumer would, until {@link #endOutsideHold(String)}. */
    public void holdFromOutside(String key) {
        if (!open.add(key)) {
            throw new IllegalStateException(key + " is already held");
        }
    }

    public void endOutsideHold(String key) {
        open.remove(key);
    }

    /** The bug behind {@code key}'s {@code fail} script is fixed: its next handling applies the effect. */
    public void fix(String key) {
        fixed.add(key);
    }

    /** Every handling from now on fails as on a database that refuses connections, until {@link #recover()}. */
    public void beUnreachable() {
        health = Health.UNREACHABLE;
    }

    /** Every handling from now on loses its session inside the handler, until {@link #recover()}. */
    public void endSessionsMidMethod() {
        health = Health.ENDS_SESSIONS;
    }

    public void recover() {
        health = Health.UP;
    }

    /** How often the effect of {@code key} was committed: 1 is exactly once. */
    public int effects(String key) {
        return read(effects, key);
    }

    /** How often the handler was called for {@code key}, whatever it answered. */
    public int calls(String key) {
        return read(calls, key);
    }

    /** How often a handling of {@code key} found it held by another transaction. */
    public int contended(String key) {
        return read(contended, key);
    }

    /** How often a held handling of {@code key} was interrupted. */
    public int interrupted(String key) {
        return read(interrupted, key);
    }

    /** The keys in the order their effects committed. */
    public List<String> commitOrder() {
        return List.copyOf(order);
    }

    /** Every key whose effect committed, with its count. */
    public Map<String, Integer> allEffects() {
        Map<String, Integer> all = new ConcurrentHashMap<>();
        effects.forEach((k, v) -> all.put(k, v.get()));
        return all;
    }

    private static void count(Map<String, AtomicInteger> counts, String key) {
        counts.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
    }

    private static int read(Map<String, AtomicInteger> counts, String key) {
        AtomicInteger n = counts.get(key);
        return n == null ? 0 : n.get();
    }
}
