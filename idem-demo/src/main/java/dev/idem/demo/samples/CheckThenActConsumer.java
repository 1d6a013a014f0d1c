package dev.idem.demo.samples;

/**
 * Wrong on purpose, for the lab's self-test: looks the payment up in the ledger and applies it only if it is not
 * there, with no unique key behind the check. Resends and redeliveries find the row; two copies handled at the same
 * moment by two consumers both find none and both apply: the lab must find doubles, from those races only.
 */
public final class CheckThenActConsumer {
    /**
     * What a real handler does between its check and its write (a fraud check, a call to the card processor): the
     * window in which a second consumer's check finds no row either. With the provider call alone (15 ms) a loaded
     * machine's scheduling spread the two copies' handling apart, and a CI run found no double.
     */
    static final long CHECK_TO_WRITE_MILLIS = 60;

    private CheckThenActConsumer() {}

    public static void main(String[] args) {
        Crash.onException(() -> run(SampleArgs.parse(args)));
    }

    private static void run(SampleArgs a) throws Exception {
        Ledger ledger = new Ledger(a.get("jdbc"));
        PaymentSource source = PaymentSource.of(a);
        while (true) {
            for (Payment p : source.next()) {
                if (!ledger.applied(p)) {
                    Thread.sleep(CHECK_TO_WRITE_MILLIS);
                    ledger.apply(p);
                }
            }
            source.acknowledge();
        }
    }
}
