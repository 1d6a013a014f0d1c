package dev.idem.rocketmq;

import dev.idem.spi.Attempts;
import org.apache.rocketmq.common.message.MessageExt;
import org.jspecify.annotations.Nullable;

/**
 * The {@link Attempts} of a message on the concurrent listener, carried from one delivery to the next by the broker.
 *
 * <p>The handler's failures are RocketMQ's {@code reconsumeTimes}: the broker counts every send-back, the listener's
 * uncounted retry copies keep it, and a producer sending to the topic cannot set it. The waits in a row (which only
 * grow the back-off, capped by the policy's {@code maxDelay}) are in the property {@value #WAITS} of the uncounted
 * copies as {@code <reconsumeTimes>:<waits>}: they count only while {@code reconsumeTimes} is the one they were written
 * with, so a counted send-back (which keeps the properties) starts them again; a value a producer set is read as no
 * wait or as a longer back-off, nothing else.
 */
final class RedeliveryAttempts {
    static final String WAITS = "IDEM_WAITS";

    private RedeliveryAttempts() {}

    static Attempts of(MessageExt message) {
        int failures = Math.max(0, message.getReconsumeTimes());
        return new Attempts(failures, waits(message.getProperty(WAITS), failures));
    }

    /** The {@value #WAITS} value that carries {@code attempts} on a copy that keeps {@code reconsumeTimes}. */
    static String waitsValue(int reconsumeTimes, Attempts attempts) {
        return reconsumeTimes + ":" + attempts.waits();
    }

    private static int waits(@Nullable String value, int reconsumeTimes) {
        if (value == null) {
            return 0;
        }
        int colon = value.indexOf(':');
        try {
            if (colon < 0 || Integer.parseInt(value.substring(0, colon)) != reconsumeTimes) {
                return 0;
            }
            return Math.max(0, Integer.parseInt(value.substring(colon + 1)));
        } catch (NumberFormatException e) {
            return 0;
        }
    }
}
