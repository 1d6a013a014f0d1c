package dev.idem.demo;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The user's effects compared with the truth: payments applied more than once, payments never applied, effects of
 * no payment the lab sent, effects with another amount, and accounts whose sum of effects is not the sum of their
 * payments. Rows of payment ids that were there before the run are left out and counted.
 *
 * @param effects effect rows of this run
 * @param beforeRun rows of payment ids present before the run started (ignored)
 * @param doublePayments payments applied more than once
 * @param extraEffects effects beyond one per payment
 * @param lost payments never applied
 * @param unknown effects of a payment id the lab never sent
 * @param wrongAmount effects whose amount is not the payment's
 * @param accountMismatches accounts whose effects do not add up to their payments
 * @param examples a few payment ids of each kind, for the report
 * @param doubled the ids of the payments applied more than once
 */
record EffectsVerdict(
        long effects,
        long beforeRun,
        long doublePayments,
        long extraEffects,
        long lost,
        long unknown,
        long wrongAmount,
        long accountMismatches,
        Map<String, List<String>> examples,
        Set<String> doubled) {

    private static final int EXAMPLES = 5;

    boolean passed() {
        return doublePayments == 0 && lost == 0 && unknown == 0 && wrongAmount == 0 && accountMismatches == 0;
    }

    static EffectsVerdict of(List<PaymentWorkload.Payment> truth, List<EffectsQuery.Row> rows, Set<String> before) {
        Map<String, PaymentWorkload.Payment> byId = new HashMap<>();
        Map<String, Long> expectedBalance = new TreeMap<>();
        for (PaymentWorkload.Payment p : truth) {
            byId.put(p.id(), p);
            expectedBalance.merge(p.account(), p.amount(), Long::sum);
        }
        Map<String, List<String>> examples = new TreeMap<>();
        Map<String, Integer> applied = new HashMap<>();
        Map<String, Long> balance = new TreeMap<>();
        long effects = 0;
        long beforeRun = 0;
        long unknown = 0;
        long wrongAmount = 0;
        for (EffectsQuery.Row r : rows) {
            String id = r.paymentId() == null ? "(null)" : r.paymentId().trim();
            if (before.contains(id)) {
                beforeRun++;
                continue;
            }
            effects++;
            PaymentWorkload.Payment p = byId.get(id);
            if (p == null) {
                unknown++;
                example(examples, "unknown", id);
                if (r.account() != null && r.amount() != null) {
                    balance.merge(r.account(), r.amount(), Long::sum);
                }
                continue;
            }
            applied.merge(id, 1, Integer::sum);
            long amount = r.amount() == null ? p.amount() : r.amount();
            if (amount != p.amount()) {
                wrongAmount++;
                example(examples, "wrong_amount", id);
            }
            balance.merge(r.account() == null ? p.account() : r.account(), amount, Long::sum);
        }
        Set<String> doubled = new java.util.TreeSet<>();
        long extra = 0;
        long lost = 0;
        for (PaymentWorkload.Payment p : truth) {
            int n = applied.getOrDefault(p.id(), 0);
            if (n == 0) {
                lost++;
                example(examples, "lost", p.id());
            } else if (n > 1) {
                doubled.add(p.id());
                extra += n - 1;
                example(examples, "double", p.id() + " ×" + n);
            }
        }
        Set<String> accounts = new java.util.TreeSet<>(expectedBalance.keySet());
        accounts.addAll(balance.keySet());
        long mismatches = 0;
        for (String a : accounts) {
            long expected = expectedBalance.getOrDefault(a, 0L);
            long actual = balance.getOrDefault(a, 0L);
            if (expected != actual) {
                mismatches++;
                example(
                        examples,
                        "account",
                        a + ": " + TerminalTable.money(actual) + " applied, " + TerminalTable.money(expected)
                                + " expected");
            }
        }
        return new EffectsVerdict(
                effects, beforeRun, doubled.size(), extra, lost, unknown, wrongAmount, mismatches, examples, doubled);
    }

    private static void example(Map<String, List<String>> examples, String kind, String what) {
        List<String> list = examples.computeIfAbsent(kind, k -> new ArrayList<>());
        if (list.size() < EXAMPLES) {
            list.add(what);
        }
    }
}
