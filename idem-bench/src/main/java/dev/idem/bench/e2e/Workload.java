package dev.idem.bench.e2e;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;
import org.jspecify.annotations.Nullable;

/**
 * The deliveries of one run, fixed by a seed so that every contender sees the same stream: {@code deliveries}
 * messages "debit account A by X for payment P", of which a share {@code duplicates} are copies of earlier payments.
 * A share {@code racing} of those copies race their original: the consumer that takes the original hands the copy to
 * a second thread first. The others arrive later in the stream. Faults are drawn per delivery and strike its first
 * attempt only (a redelivery runs clean).
 */
record Workload(List<Payment> payments, List<Delivery> deliveries, int accounts, long initialBalance) {

    /** One payment: the effect that must happen exactly once. */
    record Payment(long id, int account, long amount) {
        String key() {
            return "pay-" + id;
        }
    }

    /** What goes wrong on a delivery's first attempt. */
    enum Fault {
        NONE,
        /** The business transaction throws after its first statement; the message is redelivered. */
        HANDLER_FAILURE,
        /**
         * The consumer dies inside the business transaction (the database rolls it back) after the contender placed
         * its mark or claim; nothing after that point runs; the message is redelivered.
         */
        CRASH_IN_HANDLER,
        /**
         * The consumer dies after the effect committed, before the ack (and, for a lease store, before the claim is
         * completed); the message is redelivered.
         */
        CRASH_AFTER_COMMIT
    }

    /** One delivery of a payment. {@code racer}: a copy to start on another thread just before this one. */
    record Delivery(Payment payment, Fault fault, @Nullable Delivery racer, int attempt) {
        String key() {
            return payment.key();
        }

        /** The same message delivered again by the broker: no fault, no racer. */
        Delivery redelivered() {
            return new Delivery(payment, Fault.NONE, null, attempt + 1);
        }

        /** This delivery without its racer (the racer was dispatched). */
        Delivery alone() {
            return racer == null ? this : new Delivery(payment, fault, null, attempt);
        }
    }

    /** Settings of the stream. */
    record Shape(
            int deliveries,
            double duplicates,
            double racing,
            int accounts,
            double handlerFailures,
            double crashesInHandler,
            double crashesAfterCommit,
            long seed) {
        Shape {
            if (deliveries < 1) {
                throw new IllegalArgumentException("deliveries must be at least 1, got " + deliveries);
            }
            share("duplicates", duplicates);
            share("racing", racing);
            share("handler failures", handlerFailures);
            share("crashes in handler", crashesInHandler);
            share("crashes after commit", crashesAfterCommit);
            if (handlerFailures + crashesInHandler + crashesAfterCommit > 0.5) {
                throw new IllegalArgumentException("fault rates add up to more than 50%");
            }
            if (accounts < 1) {
                throw new IllegalArgumentException("accounts must be at least 1, got " + accounts);
            }
        }

        Shape withoutFaults() {
            return new Shape(deliveries, duplicates, racing, accounts, 0, 0, 0, seed);
        }

        /** The same shape without faults, with {@code count} deliveries and another seed. */
        Shape withDeliveries(int count) {
            return new Shape(count, duplicates, racing, accounts, 0, 0, 0, seed + 1);
        }

        boolean faulty() {
            return handlerFailures + crashesInHandler + crashesAfterCommit > 0;
        }

        private static void share(String name, double value) {
            if (!(value >= 0 && value < 1)) {
                throw new IllegalArgumentException(name + " must be a share in [0, 1), got " + value);
            }
        }
    }

    static Workload generate(Shape shape) {
        SplittableRandom random = new SplittableRandom(shape.seed());
        int copies = (int) Math.round(shape.deliveries() * shape.duplicates());
        int unique = shape.deliveries() - copies;
        if (unique < 1) {
            throw new IllegalArgumentException("no payment left once duplicates are taken out");
        }
        List<Payment> payments = new ArrayList<>(unique);
        for (int i = 0; i < unique; i++) {
            payments.add(new Payment(i + 1, random.nextInt(shape.accounts()) + 1, 1 + random.nextInt(100)));
        }
        boolean[] hasRacer = new boolean[unique];
        List<@Nullable Delivery> racers = new ArrayList<>(Collections.nCopies(unique, null));
        record Later(int afterOriginal, Delivery copy) {}
        List<Later> later = new ArrayList<>();
        for (int c = 0; c < copies; c++) {
            int original = random.nextInt(unique);
            Delivery copy = new Delivery(payments.get(original), fault(shape, random), null, 1);
            if (!hasRacer[original] && random.nextDouble() < shape.racing()) {
                hasRacer[original] = true;
                racers.set(original, copy);
            } else {
                later.add(new Later(original + 1 + random.nextInt(unique - original), copy));
            }
        }
        later.sort(Comparator.comparingInt(Later::afterOriginal));
        List<Delivery> deliveries = new ArrayList<>(shape.deliveries());
        int next = 0;
        for (int i = 0; i < unique; i++) {
            while (next < later.size() && later.get(next).afterOriginal() <= i) {
                deliveries.add(later.get(next++).copy());
            }
            deliveries.add(new Delivery(payments.get(i), fault(shape, random), racers.get(i), 1));
        }
        while (next < later.size()) {
            deliveries.add(later.get(next++).copy());
        }
        return new Workload(List.copyOf(payments), List.copyOf(deliveries), shape.accounts(), 1_000_000_000L);
    }

    private static Fault fault(Shape shape, SplittableRandom random) {
        double u = random.nextDouble();
        if (u < shape.handlerFailures()) {
            return Fault.HANDLER_FAILURE;
        }
        u -= shape.handlerFailures();
        if (u < shape.crashesInHandler()) {
            return Fault.CRASH_IN_HANDLER;
        }
        u -= shape.crashesInHandler();
        return u < shape.crashesAfterCommit() ? Fault.CRASH_AFTER_COMMIT : Fault.NONE;
    }

    /** Every delivery the broker sends at first, racers included. */
    int messageCount() {
        return (int)
                deliveries.stream().mapToLong(d -> d.racer() == null ? 1 : 2).sum();
    }
}
