package dev.idem.spi;

/**
 * How often a message has already been tried: {@code failures} counts the handler's own retry outcomes ({@code
 * FAILED}, {@code OUT_OF_ORDER}), which the {@link dev.idem.RetryPolicy} bounds; {@code waits} counts the {@code
 * IN_PROGRESS} ones (key held elsewhere, store or database unreachable), which are never bounded and only grow the
 * back-off. A broker adapter carries both from one delivery of a message to the next (in memory, a header or a
 * property) and hands them to {@link DeliveryDecision#decide}.
 */
public record Attempts(int failures, int waits) {
    /** A message not tried before. */
    public static final Attempts NONE = new Attempts(0, 0);

    public Attempts {
        if (failures < 0 || waits < 0) {
            throw new IllegalArgumentException("attempt counts cannot be negative: " + failures + ", " + waits);
        }
    }

    /** The counts of a message tried {@code failures} times by its handler, e.g. read from a header. */
    public static Attempts failures(int failures) {
        return new Attempts(failures, 0);
    }

    Attempts afterFailure() {
        return new Attempts(saturatedIncrement(failures), 0);
    }

    Attempts afterWait() {
        return new Attempts(failures, saturatedIncrement(waits));
    }

    private static int saturatedIncrement(int n) {
        return n == Integer.MAX_VALUE ? n : n + 1;
    }
}
