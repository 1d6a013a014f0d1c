package dev.idem.demo;

import java.util.List;

/**
 * What a consumer lab found, for the terminal, the HTML and the JSON report.
 *
 * @param broker {@code kafka} or {@code nats}
 * @param command the consumer command as given (placeholders unexpanded)
 * @param consumers copies that ran at once
 * @param environment what the run used
 * @param workload the stream: payments, copies by cause
 * @param faults every fault and consumer exit, with its time
 * @param effectsSql the query that listed the effects
 * @param verdict the effects against the truth
 * @param doublesByCopies the payments applied more than once, by the extra copies the lab sent of them ({@code
 *     "none"}: sent once, so applied again after a redelivery)
 * @param drained the broker held nothing unacknowledged and the effect count stayed the same
 * @param drainSeconds from the end of the stream to the drain (or to giving up)
 * @param seconds the whole run
 */
record ConsumerLabResult(
        String broker,
        String command,
        int consumers,
        List<LabResult.Entry> environment,
        List<LabResult.Entry> workload,
        List<FaultLog.Event> faults,
        String effectsSql,
        EffectsVerdict verdict,
        java.util.Map<String, Long> doublesByCopies,
        boolean drained,
        double drainSeconds,
        double seconds) {

    /** 0 every payment applied exactly once, 1 the verdict failed, 3 never drained. */
    int exitStatus() {
        if (!drained) {
            return 3;
        }
        return verdict.passed() ? 0 : 1;
    }

    String verdictLine() {
        if (!drained) {
            return "NEVER DRAINED: the consumers did not take the whole stream within the drain timeout (the counts"
                    + " below are of what was applied by then)";
        }
        if (verdict.passed()) {
            return "PASSED: every payment applied exactly once, every account balance right";
        }
        return "FAILED: " + verdict.doublePayments() + " payment(s) applied more than once, " + verdict.lost()
                + " lost, " + verdict.unknown() + " unknown, " + verdict.accountMismatches() + " account(s) off";
    }

    long faultCount(String kind) {
        return faults.stream().filter(f -> f.kind().equals(kind)).count();
    }
}
