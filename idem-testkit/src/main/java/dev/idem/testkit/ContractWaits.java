package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.RetryPolicy;
import dev.idem.testkit.AdapterContract.DeadLetter;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * How {@link AdapterContract}'s scenarios wait for the consumers and judge the end state: bounded waits that fail at
 * once on an unexpected dead letter, and a settling pause after which the dead-letter place must not change.
 */
final class ContractWaits {
    /** The longest any one wait of the contract takes. */
    static final Duration WAIT = Duration.ofSeconds(60);

    private static final Duration SETTLE = Duration.ofSeconds(1);

    private final Callable<List<DeadLetter>> deadLetters;
    private final ContractLedger ledger;
    private final RetryPolicy retryPolicy;

    ContractWaits(Callable<List<DeadLetter>> deadLetters, ContractLedger ledger, RetryPolicy retryPolicy) {
        this.deadLetters = deadLetters;
        this.ledger = ledger;
        this.retryPolicy = retryPolicy;
    }

    /** Waits for {@code condition}. */
    void until(Callable<Boolean> condition) {
        await().atMost(WAIT).until(condition);
    }

    /** Waits for {@code condition}, failing at once when anything is dead-lettered meanwhile. */
    void untilClean(Callable<Boolean> condition) {
        await().atMost(WAIT).until(() -> {
            assertThat(deadLetters.call()).as("dead letters").isEmpty();
            return condition.call();
        });
    }

    /** Lets {@code pause} pass, for what cannot be observed (a stop that is meant to wait for a handler). */
    void pause(Duration pause) {
        await().pollDelay(pause).atMost(WAIT).until(() -> true);
    }

    /**
     * Waits out the {@code outage}, until every key the consumers reached was tried more often than the retry policy
     * allows a failing handler. A broker that delivers a partition in order (Kafka) retries the first message of each
     * partition in place and reaches the others only after the outage: those must have been tried beyond the bound,
     * the others not at all.
     */
    void untilEachCalledBeyondTheBound(List<String> keys, Duration outage) {
        long deadline = System.nanoTime() + outage.toNanos();
        await().atMost(WAIT.plus(outage)).until(() -> {
            assertThat(deadLetters.call()).as("dead letters during the outage").isEmpty();
            List<String> reached =
                    keys.stream().filter(k -> ledger.calls(k) > 0).toList();
            return System.nanoTime() >= deadline
                    && !reached.isEmpty()
                    && reached.stream().allMatch(k -> ledger.calls(k) > retryPolicy.maxAttempts());
        });
    }

    /** Nothing was dead-lettered, and nothing more happens for a while: every message is settled. */
    void assertSettled() throws Exception {
        settle();
        assertThat(deadLetters.call()).as("dead letters").isEmpty();
        assertThat(ledger.allEffects())
                .as("every applied key exactly once")
                .allSatisfy((key, effects) -> assertThat(effects).as(key).isEqualTo(1));
    }

    /** Lets retries that are still due happen before the verdict: the dead-letter place must not change after. */
    void settle() throws Exception {
        int before = deadLetters.call().size();
        await().pollDelay(SETTLE).atMost(SETTLE.plusSeconds(1)).until(() -> true);
        assertThat(deadLetters.call()).as("dead letters while settling").hasSize(before);
    }

    /** The reason recorded with {@code key}'s dead letter. */
    static String reasonOf(List<DeadLetter> dead, String key) {
        return dead.stream()
                .filter(d -> key.equals(d.key()))
                .map(DeadLetter::reason)
                .findFirst()
                .orElseThrow(() -> new AssertionError("no dead letter for " + key + " in " + dead));
    }
}
