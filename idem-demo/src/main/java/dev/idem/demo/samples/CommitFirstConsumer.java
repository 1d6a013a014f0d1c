package dev.idem.demo.samples;

/**
 * Wrong on purpose, for the lab's self-test: acknowledges a batch (commits the offsets) before it applies the
 * payments. A consumer killed between the two never applies the rest of its batch: the lab must find lost payments.
 * Its batches are Kafka's polls and, on NATS and RabbitMQ, up to {@value #BATCH} messages (a fetch; the deliveries
 * of a prefetch of that many, all acknowledged at once); each payment first calls a
 * downstream service ({@value #DOWNSTREAM_CALL_MILLIS} ms, most of a real handler's time), so that the window between
 * the acknowledgement and the writes is most of its time, as in the consumers it stands for (with a bare insert per
 * payment, a kill seldom landed in it and the lab's self-test sometimes saw no loss; at 20 ms the consumers were idle
 * between bursts often enough that a CI run's three kills all missed the window).
 */
public final class CommitFirstConsumer {
    private static final int BATCH = 20;
    private static final long DOWNSTREAM_CALL_MILLIS = 50;

    private CommitFirstConsumer() {}

    public static void main(String[] args) {
        Crash.onException(() -> run(SampleArgs.parse(args)));
    }

    private static void run(SampleArgs a) throws Exception {
        Ledger ledger = new Ledger(a.get("jdbc"));
        PaymentSource source = PaymentSource.of(a, BATCH);
        while (true) {
            java.util.List<Payment> batch = source.next();
            source.acknowledge();
            for (Payment p : batch) {
                Thread.sleep(DOWNSTREAM_CALL_MILLIS); // the downstream call
                ledger.apply(p);
            }
        }
    }
}
