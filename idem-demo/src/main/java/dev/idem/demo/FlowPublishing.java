package dev.idem.demo;

import java.util.ArrayList;
import java.util.List;
import java.util.function.LongConsumer;

/**
 * The publishing loop every broker shares: the flow in order, with one burst whose acknowledgements are lost (the
 * producer sends it again) at 40% of the stream and one burst the application sends again at 50%, sized by the fault
 * rates. The broker's {@link Sender} makes each burst real.
 */
final class FlowPublishing {
    private FlowPublishing() {}

    /** One broker's producer. */
    interface Sender {
        /** Publishes {@code s} (asynchronously where the client can). */
        void send(OrderFlow.Send s) throws Exception;

        /** Waits until everything sent so far is acknowledged; throws when a publish failed. */
        void flush() throws Exception;

        /** Publishes {@code chunk} while the broker's acknowledgements are lost; returns the copies resent. */
        long lostAckBurst(List<OrderFlow.Send> chunk) throws Exception;

        /** Publishes {@code chunk} and has the application send it again; returns the copies resent. */
        long resendBurst(List<OrderFlow.Send> chunk) throws Exception;
    }

    /** What the bursts resent. */
    record Copies(long clientRetries, long appResends, int bursts) {}

    static Copies publish(List<OrderFlow.Send> sends, LabOptions.Faults faults, LongConsumer progress, Sender sender)
            throws Exception {
        int n = sends.size();
        int lostAck = (int) Math.round(n * faults.producerRetry());
        int resend = (int) Math.round(n * faults.appResend());
        // Bursts at fixed places of the stream: [start, end) ranges and their kind.
        List<int[]> bursts = new ArrayList<>();
        addBursts(bursts, lostAck, n, new double[] {0.4}, 0);
        addBursts(bursts, resend, n, new double[] {0.5}, 1);
        bursts.sort((a, b) -> Integer.compare(a[0], b[0]));
        long clientRetries = 0;
        long appResends = 0;
        int i = 0;
        for (int[] burst : bursts) {
            i = sendUpTo(sends, i, burst[0], progress, sender);
            sender.flush();
            List<OrderFlow.Send> chunk = sends.subList(burst[0], burst[1]);
            if (burst[2] == 0) {
                clientRetries += sender.lostAckBurst(chunk);
            } else {
                appResends += sender.resendBurst(chunk);
            }
            i = burst[1];
            progress.accept(i);
        }
        sendUpTo(sends, i, n, progress, sender);
        sender.flush();
        progress.accept(n);
        return new Copies(clientRetries, appResends, bursts.size());
    }

    private static int sendUpTo(List<OrderFlow.Send> sends, int from, int to, LongConsumer progress, Sender sender)
            throws Exception {
        int i = from;
        for (; i < to; i++) {
            sender.send(sends.get(i));
            if (i % 256 == 0) {
                progress.accept(i);
            }
        }
        return i;
    }

    private static void addBursts(List<int[]> bursts, int total, int n, double[] places, int kind) {
        if (total <= 0) {
            return;
        }
        int count = Math.min(places.length, total);
        int each = (total + count - 1) / count;
        int left = total;
        for (int b = 0; b < count && left > 0; b++) {
            int size = Math.min(each, left);
            int start = Math.min((int) (n * places[b]), n - size);
            bursts.add(new int[] {start, start + size, kind});
            left -= size;
        }
    }
}
