package dev.idem.rabbitmq;

import com.rabbitmq.client.Channel;
import java.io.IOException;

/** Channel chores shared by the consumer and the processor. */
final class Channels {
    private Channels() {}

    /** Closes {@code channel} without waiting for the broker; its unacked deliveries go back to their queues. */
    static void abort(Channel channel) {
        try {
            channel.abort();
        } catch (IOException | RuntimeException e) {
            // already closed or the connection is gone: the broker requeues the deliveries either way
        }
    }
}
