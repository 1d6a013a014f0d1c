package dev.idem.demo;

import java.util.List;

/**
 * Everything a lab run measured, for the terminal table and the reports.
 *
 * @param broker the broker the flow went over ({@code kafka}, {@code rocketmq}, {@code rabbitmq}, {@code nats})
 * @param environment what the run used (broker, database, lease stores), as label → value
 * @param injected what was injected, as label → count
 * @param strategies one result per strategy, the unguarded one first
 */
record LabResult(
        String broker,
        List<Entry> environment,
        List<Entry> injected,
        List<StrategyResult> strategies,
        long orders,
        long paidOrders,
        long messages,
        long recordsInTopic,
        double seconds) {

    /** A labelled value. */
    record Entry(String label, String value) {}

    /** Every guarded strategy is correct and finished. */
    boolean guardsHeld() {
        return strategies.stream().filter(StrategyResult::guarded).allMatch(StrategyResult::correct)
                && strategies.stream().allMatch(StrategyResult::finished);
    }

    boolean unguardedDamaged() {
        return strategies.stream().filter(s -> !s.guarded()).anyMatch(StrategyResult::damaged);
    }

    String verdict() {
        if (!strategies.stream().allMatch(StrategyResult::finished)) {
            return "INCOMPLETE: a strategy did not consume the whole topic, so nothing is proven";
        }
        if (!guardsHeld()) {
            return "FAILED: a guarded strategy let damage through";
        }
        return "PASSED: every guard held (no double charge, no lost payment, every order in its right state)";
    }
}
