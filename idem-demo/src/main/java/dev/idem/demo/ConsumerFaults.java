package dev.idem.demo;

import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;

/**
 * Which consumer-side fault a message gets, decided from its key and the seed, so that every strategy meets the
 * same faults on the same messages.
 */
final class ConsumerFaults {

    enum Fault {
        NONE,
        /** The first consumer is slow; the message is redelivered to a second consumer while the first still works. */
        TIMEOUT,
        /** Two consumers get the message at the same instant. */
        CONCURRENT,
        /** The consumer crashes after the database commit, before the offset commit. */
        CRASH
    }

    private final LabOptions.Faults rates;
    private final long seed;
    private final LabBroker broker;

    ConsumerFaults(LabOptions.Faults rates, long seed, LabBroker broker) {
        this.rates = rates;
        this.seed = seed;
        this.broker = broker;
    }

    /** The fault of the message with {@code key}; {@link Fault#NONE} for one the broker cannot produce. */
    Fault of(String key) {
        Fault fault = drawn(key);
        return broker.unavailable(fault).isPresent() ? Fault.NONE : fault;
    }

    private Fault drawn(String key) {
        long h = seed * 0x9E3779B97F4A7C15L;
        for (byte b : key.getBytes(StandardCharsets.UTF_8)) {
            h = (h ^ b) * 0x100000001B3L;
        }
        double r = new SplittableRandom(h).nextDouble();
        if (r < rates.consumerTimeout()) {
            return Fault.TIMEOUT;
        }
        r -= rates.consumerTimeout();
        if (r < rates.concurrent()) {
            return Fault.CONCURRENT;
        }
        r -= rates.concurrent();
        return r < rates.crash() ? Fault.CRASH : Fault.NONE;
    }
}
