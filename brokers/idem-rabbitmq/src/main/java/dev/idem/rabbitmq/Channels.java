package dev.idem.rabbitmq;

import com.rabbitmq.client.AMQP;
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

    /**
     * Returns the unacked deliveries of {@code channel} to their queues by aborting it, unless it is closed already
     * (then the broker has them back): aborting a channel of a lost connection with automatic recovery would also strike
     * it, and its consumer, from the recovery, and it would never come back with the connection.
     */
    static void giveBack(Channel channel) {
        if (channel.isOpen()) {
            abort(channel);
        }
    }

    /**
     * Whether a message with {@code properties} can be published on {@code channel}: the client refuses (with an
     * {@code IllegalArgumentException}, after counting the publish for confirms) a content header larger than the
     * connection's {@code frame_max}.
     */
    static boolean fitsInOneFrame(Channel channel, AMQP.BasicProperties properties, int bodyLength) {
        int frameMax = channel.getConnection().getFrameMax();
        if (frameMax == 0) {
            return true;
        }
        try {
            return properties.toFrame(channel.getChannelNumber(), bodyLength).size() <= frameMax;
        } catch (IOException e) {
            return false;
        }
    }
}
