package dev.idem.demo;

import java.util.Map;

/**
 * What one strategy did: the damage measured with SQL, and the consumer's counts.
 *
 * @param finished whether it consumed the whole topic before the deadline
 * @param sql the {@link Verification} values by name
 * @param deliveries every handling, including second copies and retries
 * @param duplicatesSuppressed deliveries the guard answered {@code DUPLICATE}
 * @param retries deliveries answered {@code IN_PROGRESS}, {@code OUT_OF_ORDER} or {@code FAILED}, retried later
 * @param crashes injected consumer crashes (each followed by a redelivery from the last committed offset)
 * @param secondCopies messages handed to a second consumer while, or as, the first handled them
 * @param deadLetters records in the strategy's dead-letter topic
 * @param seconds wall time of its consumption (all strategies consume at once)
 */
record StrategyResult(
        String id,
        String description,
        boolean guarded,
        boolean finished,
        String failure,
        Map<String, Long> sql,
        long deliveries,
        long duplicatesSuppressed,
        long retries,
        long crashes,
        long secondCopies,
        long deadLetters,
        long records,
        double seconds) {

    long doubleCharged() {
        return sql.get("double_charged_orders");
    }

    long overcharged() {
        return sql.get("overcharged_amount");
    }

    long lostPayments() {
        return sql.get("lost_payments");
    }

    long wrongState() {
        return sql.get("wrong_final_state");
    }

    long chargedCancelled() {
        return sql.get("charged_cancelled_orders");
    }

    long wrongBalances() {
        return sql.get("wrong_balances");
    }

    long charges() {
        return sql.get("charges");
    }

    double throughput() {
        return seconds <= 0 ? 0 : records / seconds;
    }

    /** No damage at all, and the whole topic consumed. */
    boolean correct() {
        return finished
                && failure.isEmpty()
                && doubleCharged() == 0
                && overcharged() == 0
                && lostPayments() == 0
                && wrongState() == 0
                && chargedCancelled() == 0
                && wrongBalances() == 0;
    }

    boolean damaged() {
        return doubleCharged() > 0
                || overcharged() != 0
                || lostPayments() > 0
                || wrongState() > 0
                || chargedCancelled() > 0
                || wrongBalances() > 0;
    }
}
