package dev.idem.demo.samples;

/**
 * Wrong on purpose, for the lab's self-test: applies every copy it receives, then acknowledges. Every duplicate the
 * stream carries, and every copy redelivered after a kill, is applied again: the lab must find payments applied more
 * than once.
 */
public final class NoDedupConsumer {
    private NoDedupConsumer() {}

    public static void main(String[] args) {
        Crash.onException(() -> run(SampleArgs.parse(args)));
    }

    private static void run(SampleArgs a) throws Exception {
        Ledger ledger = new Ledger(a.get("jdbc"));
        PaymentSource source = PaymentSource.of(a);
        while (true) {
            for (Payment p : source.next()) {
                ledger.apply(p);
            }
            source.acknowledge();
        }
    }
}
