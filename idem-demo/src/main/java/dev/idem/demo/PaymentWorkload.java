package dev.idem.demo;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;

/**
 * The payment stream of a consumer lab: the truth (each payment's id, account and amount) and the schedule of every
 * copy sent, with the duplicates real systems make, in bursts separated by quiet periods. Repeatable from the seed.
 *
 * @param payments the truth: each payment must be applied exactly once
 * @param sends every copy, in the order of its time (milliseconds from the start of the stream)
 */
record PaymentWorkload(List<Payment> payments, List<Send> sends) {

    /** One payment: what the consumer must apply once. Amounts are in cents. */
    record Payment(String id, String account, long amount) {
        /** The message value: {@code <account>:<cents>}. */
        String value() {
            return account + ":" + amount;
        }
    }

    /** Why a copy was sent. */
    enum Copy {
        ORIGINAL("original"),
        RESEND("resent right after (application retry)"),
        LATE_RESEND("resent a little later (1-3 s)"),
        MUCH_LATER("resent much later (across kills and commits)"),
        CROSS("copy a second consumer fetches at the same moment");

        final String label;

        Copy(String label) {
            this.label = label;
        }
    }

    /** One message sent at {@code atMillis}. */
    record Send(long atMillis, Payment payment, Copy copy) {}

    /**
     * How the stream is shaped.
     *
     * @param payments payments in the truth
     * @param accounts accounts they are spread over
     * @param resend fraction resent right after
     * @param lateResend fraction resent 1 to 3 s later
     * @param muchLater fraction resent half the stream later
     * @param cross fraction copied for a second consumer at the same moment (besides the first of each burst)
     */
    record Shape(int payments, int accounts, double resend, double lateResend, double muchLater, double cross) {}

    private static final int SPACING_MILLIS = 4;
    private static final int LEAD_MILLIS = 150;

    /** Generates the truth and the schedule; ids and accounts start with {@code runTag}, unique to the run. */
    static PaymentWorkload generate(Shape shape, String runTag, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        List<Payment> payments = new ArrayList<>();
        List<Send> sends = new ArrayList<>();
        List<Payment> muchLater = new ArrayList<>();
        List<Long> muchLaterFrom = new ArrayList<>();
        long t = 0;
        int next = 0;
        while (next < shape.payments()) {
            int burst = Math.min(shape.payments() - next, 15 + random.nextInt(46));
            for (int i = 0; i < burst; i++, next++) {
                Payment p = new Payment(
                        String.format(Locale.ROOT, "%s-p%06d", runTag, next + 1),
                        String.format(Locale.ROOT, "%s-a%03d", runTag, 1 + random.nextInt(shape.accounts())),
                        100 + random.nextInt(99_900));
                payments.add(p);
                sends.add(new Send(t, p, Copy.ORIGINAL));
                if (i == 0 || random.nextDouble() < shape.cross()) {
                    sends.add(new Send(t, p, Copy.CROSS));
                }
                if (random.nextDouble() < shape.resend()) {
                    sends.add(new Send(t + 1, p, Copy.RESEND));
                }
                if (random.nextDouble() < shape.lateResend()) {
                    sends.add(new Send(t + 1000 + random.nextInt(2000), p, Copy.LATE_RESEND));
                }
                if (random.nextDouble() < shape.muchLater()) {
                    muchLater.add(p);
                    muchLaterFrom.add(t);
                }
                // The first of a burst goes alone with its copy, to consumers idle after the quiet period: two of
                // them fetch the same payment at the same moment.
                t += i == 0 ? LEAD_MILLIS : SPACING_MILLIS;
            }
            t += 400 + random.nextInt(1600);
        }
        long streamMillis = t;
        for (int i = 0; i < muchLater.size(); i++) {
            long at = Math.min(streamMillis, muchLaterFrom.get(i) + streamMillis / 2);
            sends.add(new Send(at, muchLater.get(i), Copy.MUCH_LATER));
        }
        sends.sort(Comparator.comparingLong(Send::atMillis));
        return new PaymentWorkload(List.copyOf(payments), List.copyOf(sends));
    }

    /** When the last copy is sent. */
    long durationMillis() {
        return sends.isEmpty() ? 0 : sends.get(sends.size() - 1).atMillis();
    }

    /**
     * For the payments in {@code ids}: how many had each combination of extra copies sent ({@code "CROSS"}, {@code
     * "RESEND+LATE_RESEND"}, {@code "none"} for a payment sent once), which tells a double's cause.
     */
    Map<String, Long> copiesOf(Set<String> ids) {
        Map<String, Set<Copy>> copies = new HashMap<>();
        for (Send s : sends) {
            if (ids.contains(s.payment().id()) && s.copy() != Copy.ORIGINAL) {
                copies.computeIfAbsent(s.payment().id(), k -> EnumSet.noneOf(Copy.class))
                        .add(s.copy());
            }
        }
        Map<String, Long> counts = new TreeMap<>();
        for (String id : ids) {
            Set<Copy> c = copies.getOrDefault(id, Set.of());
            String key = c.isEmpty()
                    ? "none"
                    : String.join("+", c.stream().map(Copy::name).toList());
            counts.merge(key, 1L, Long::sum);
        }
        return counts;
    }

    long count(Copy copy) {
        return sends.stream().filter(s -> s.copy() == copy).count();
    }
}
