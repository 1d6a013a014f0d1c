package dev.idem.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class EffectsVerdictTest {
    private static final List<PaymentWorkload.Payment> TRUTH = List.of(
            new PaymentWorkload.Payment("p1", "a1", 100),
            new PaymentWorkload.Payment("p2", "a1", 200),
            new PaymentWorkload.Payment("p3", "a2", 300));

    @Test
    void exactlyOnce_withAccountAndAmount_passes() {
        EffectsVerdict v = EffectsVerdict.of(
                TRUTH, List.of(row("p1", "a1", 100L), row("p2", "a1", 200L), row("p3", "a2", 300L)), Set.of());

        assertThat(v.passed()).isTrue();
        assertThat(v.effects()).isEqualTo(3);
    }

    @Test
    void doubleLostUnknownAndBalances_areEachCounted() {
        EffectsVerdict v = EffectsVerdict.of(
                TRUTH,
                List.of(
                        row("p1", "a1", 100L),
                        row("p1", "a1", 100L),
                        row("p3", "a2", 300L),
                        row("x9", "a2", 50L),
                        row("old-1", "a7", 1L)),
                Set.of("old-1"));

        assertThat(v.passed()).isFalse();
        assertThat(v.effects()).isEqualTo(4);
        assertThat(v.beforeRun()).isEqualTo(1);
        assertThat(v.doublePayments()).isEqualTo(1);
        assertThat(v.extraEffects()).isEqualTo(1);
        assertThat(v.doubled()).containsExactly("p1");
        assertThat(v.lost()).isEqualTo(1);
        assertThat(v.unknown()).isEqualTo(1);
        assertThat(v.wrongAmount()).isZero();
        // a1: 200 applied (p1 twice), 300 expected; a2: 350 applied (p3 + the unknown), 300 expected
        assertThat(v.accountMismatches()).isEqualTo(2);
        assertThat(v.examples()).containsKeys("double", "lost", "unknown", "account");
    }

    @Test
    void paymentIdsOnly_takeAccountAndAmountFromTheTruth() {
        EffectsVerdict once = EffectsVerdict.of(TRUTH, List.of(id("p1"), id("p2"), id("p3")), Set.of());
        EffectsVerdict twice = EffectsVerdict.of(TRUTH, List.of(id("p1"), id("p2"), id("p2"), id("p3")), Set.of());

        assertThat(once.passed()).isTrue();
        assertThat(twice.doublePayments()).isEqualTo(1);
        assertThat(twice.accountMismatches()).isEqualTo(1);
    }

    @Test
    void anotherAmount_isCounted_andPutsTheAccountOff() {
        EffectsVerdict v = EffectsVerdict.of(
                TRUTH, List.of(row("p1", "a1", 100L), row("p2", "a1", 250L), row("p3", "a2", 300L)), Set.of());

        assertThat(v.wrongAmount()).isEqualTo(1);
        assertThat(v.accountMismatches()).isEqualTo(1);
        assertThat(v.passed()).isFalse();
    }

    private static EffectsQuery.Row row(String id, String account, Long amount) {
        return new EffectsQuery.Row(id, account, amount);
    }

    private static EffectsQuery.Row id(String id) {
        return new EffectsQuery.Row(id, null, null);
    }
}
