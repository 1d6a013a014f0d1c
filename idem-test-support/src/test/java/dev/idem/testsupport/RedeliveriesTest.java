package dev.idem.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.ConfigurationException;
import dev.idem.Guard;
import dev.idem.InMemoryStore;
import dev.idem.Outcome;
import dev.idem.testkit.Redeliveries;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class RedeliveriesTest {
    private static final List<String> KEYS = keys(300);

    private static List<String> keys(int n) {
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            keys.add("pay-" + i);
        }
        return keys;
    }

    private static Redeliveries badDay() {
        return Redeliveries.of(KEYS)
                .duplicates(0.3)
                .concurrent(0.2)
                .lostAcks(0.1)
                .reordering(0.3)
                .threads(4)
                .seed(7);
    }

    @Test
    void unguardedHandler_onABadDay_appliesDuplicateEffects() throws Exception {
        Map<String, AtomicInteger> effects = new ConcurrentHashMap<>();

        Redeliveries.Report report = badDay().deliverTo(key -> {
            effects.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
            return Outcome.processed();
        });

        assertThat(report.unfinished()).isEmpty();
        assertThat(effects.values().stream().filter(n -> n.get() > 1)).hasSizeGreaterThan(50);
        assertThat(report.deliveries()).isGreaterThan(KEYS.size());
    }

    @Test
    void guardedHandler_onABadDay_appliesEveryEffectExactlyOnce_andLosesNothing() throws Exception {
        Map<String, AtomicInteger> effects = new ConcurrentHashMap<>();
        try (InMemoryStore store = InMemoryStore.create();
                Guard guard = Guard.of(store, "payments")) {

            Redeliveries.Report report = badDay().deliverTo(key -> guard.run(
                    key,
                    () -> effects.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet()));

            assertThat(report.unfinished()).isEmpty();
            assertThat(report.deadLettered()).isEmpty();
            assertThat(report.outcomes()).containsKey(Outcome.Type.DUPLICATE);
            assertThat(effects).hasSize(KEYS.size());
            assertThat(effects.values()).allSatisfy(n -> assertThat(n).hasValue(1));
        }
    }

    @Test
    void readmeExample_compilesRuns_andIsShownVerbatim() throws Exception {
        List<String> paymentIds = KEYS;
        try (InMemoryStore store = InMemoryStore.create();
                Guard guard = Guard.of(store, "payments")) {
            // readme:redeliveries begin
            Redeliveries.Report report = Redeliveries.of(paymentIds)
                    .duplicates(0.2)
                    .concurrent(0.1)
                    .lostAcks(0.05)
                    .reordering(0.3)
                    .threads(4)
                    .seed(42)
                    .deliverTo(id -> guard.run(id, () -> charge(id)));
            assertThat(report.unfinished()).isEmpty(); // nothing lost
            assertThat(countLedgerRowsPerPayment()).allMatch(n -> n == 1); // nothing doubled
            // readme:redeliveries end
        }
        assertThat(countLedgerRowsPerPayment()).hasSize(KEYS.size());
        ReadmeSnippets.assertShown(Path.of("src/test/java/dev/idem/testsupport/RedeliveriesTest.java"), "redeliveries");
    }

    private final Map<String, AtomicInteger> ledger = new ConcurrentHashMap<>();

    private void charge(String id) {
        ledger.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
    }

    private List<Integer> countLedgerRowsPerPayment() {
        return ledger.values().stream().map(AtomicInteger::get).toList();
    }

    @Test
    void messageThatIsAlwaysRetried_isReportedUnfinished_notSilentlyDropped() throws Exception {
        Redeliveries.Report report = Redeliveries.of(List.of("stuck", "fine"))
                .maxAttempts(5)
                .deliverTo(key -> key.equals("stuck") ? Outcome.outOfOrder("never ready") : Outcome.processed());

        assertThat(report.unfinished()).containsExactly("stuck");
        assertThat(report.outcomes()).containsEntry(Outcome.Type.OUT_OF_ORDER, 5);
    }

    @Test
    void rateOutsideZeroToOne_isAConfigurationError() {
        assertThatThrownBy(() -> Redeliveries.of(KEYS).duplicates(1.5))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("duplicates");
    }
}
