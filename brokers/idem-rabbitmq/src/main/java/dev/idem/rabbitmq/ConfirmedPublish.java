package dev.idem.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ReturnListener;
import com.rabbitmq.client.ShutdownSignalException;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One publish that counts only when the broker confirmed it: {@code mandatory} (an unroutable message is returned, not
 * dropped), then {@code waitForConfirms(timeout)} (not {@code waitForConfirmsOrDie}, which blocks until the heartbeat
 * kills a partitioned connection). The channel must not be published on by another thread meanwhile.
 */
final class ConfirmedPublish {
    private ConfirmedPublish() {}

    /** Why a publish did not count; the message may or may not be in the target queue. */
    static final class NotConfirmedException extends IOException {
        private static final long serialVersionUID = 1L;
        private final boolean returned;

        NotConfirmedException(String message, Throwable cause) {
            super(message, cause);
            this.returned = false;
        }

        NotConfirmedException(String message, boolean returned) {
            super(message);
            this.returned = returned;
        }

        /** True when the broker returned the message as unroutable: it is certainly not stored. */
        boolean returned() {
            return returned;
        }
    }

    /**
     * Publishes and waits for the confirm; puts the channel in confirm mode first if it is not.
     *
     * @throws NotConfirmedException when the confirm did not come within {@code timeout}, the broker nacked or
     *     returned the message, or the channel closed
     * @throws InterruptedException when interrupted while waiting (the message may have been stored)
     */
    static void publish(
            Channel channel,
            String exchange,
            String routingKey,
            AMQP.BasicProperties properties,
            byte[] body,
            Duration timeout)
            throws NotConfirmedException, InterruptedException {
        AtomicReference<String> returned = new AtomicReference<>();
        ReturnListener onReturn =
                channel.addReturnListener(r -> returned.set(r.getReplyCode() + " " + r.getReplyText()));
        String target = "exchange '" + exchange + "' with routing key '" + routingKey + "'";
        try {
            if (channel.getNextPublishSeqNo() == 0) {
                channel.confirmSelect();
            }
            channel.basicPublish(exchange, routingKey, true, properties, body);
            if (!channel.waitForConfirms(timeout.toMillis())) {
                throw new NotConfirmedException(
                        "the broker refused (nacked) the message published to " + target, false);
            }
            String reason = returned.get();
            if (reason != null) {
                throw new NotConfirmedException(
                        "the message published to " + target + " was returned as unroutable (" + reason
                                + "): no queue is bound there; declare the topology",
                        true);
            }
        } catch (TimeoutException e) {
            throw new NotConfirmedException(
                    "no publisher confirm within " + timeout.toMillis() + " ms for the message published to " + target
                            + ": it may or may not be stored",
                    e);
        } catch (ShutdownSignalException e) {
            throw new NotConfirmedException(
                    "the channel closed while publishing to " + target + ": " + e.getMessage(), e);
        } catch (NotConfirmedException e) {
            throw e;
        } catch (IOException e) {
            throw new NotConfirmedException("publishing to " + target + " failed: " + e.getMessage(), e);
        } finally {
            channel.removeReturnListener(onReturn);
        }
    }
}
