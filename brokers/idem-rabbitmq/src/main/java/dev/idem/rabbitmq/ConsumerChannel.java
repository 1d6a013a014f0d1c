package dev.idem.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Consumer;
import com.rabbitmq.client.Delivery;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.Recoverable;
import com.rabbitmq.client.ShutdownSignalException;
import java.io.IOException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * One channel of an {@link IdempotentRabbitConsumer}: a consumer with manual acks and its own handler thread, so that
 * the channel's deliveries are handled one at a time and in order, off the connection's dispatch threads.
 *
 * <p>Every delivery is handled on the channel it came on, and only while that channel lives: a delivery received
 * before the channel was lost (closed, aborted, recovered with a new connection) is skipped, as the broker redelivers
 * it.
 */
final class ConsumerChannel implements Consumer {
    private static final System.Logger LOG = System.getLogger(ConsumerChannel.class.getName());

    private final IdempotentRabbitConsumer owner;
    private final ExecutorService worker;
    /** Grows each time the channel is lost: deliveries of an older life are not handled. */
    private final AtomicInteger life = new AtomicInteger();

    private volatile @Nullable Channel channel;
    private volatile @Nullable String consumerTag;

    ConsumerChannel(IdempotentRabbitConsumer owner, int index) {
        this.owner = owner;
        String name = "idem-rabbitmq-" + owner.processor().topology().workQueue() + "-" + index;
        this.worker = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Opens the channel and subscribes; not once the consumer is stopping (a reopen racing with close), nor when the lost
     * channel is live again: the connection's automatic recovery brought it back, consumer included (aborting it would
     * send its shutdown signal here and schedule yet another reopen).
     */
    synchronized void open() throws IOException {
        if (owner.stopping()) {
            return;
        }
        Channel lost = channel;
        if (lost != null && lost.isOpen()) {
            return;
        }
        if (lost != null) {
            Channels.abort(lost); // also forgets it and its consumer for the connection's automatic recovery
        }
        Channel c = owner.connection().createChannel();
        if (c == null) {
            throw new IOException("the connection has no channel left (channel-max reached)");
        }
        try {
            c.basicQos(owner.prefetch());
            c.confirmSelect();
            channel = c;
            consumerTag = c.basicConsume(owner.processor().topology().workQueue(), false, this);
        } catch (IOException | RuntimeException e) {
            Channels.abort(c);
            throw e;
        }
    }

    /**
     * Opens a new channel after the old one was lost; false if that failed too (try again later). A work queue that no
     * longer exists stops the consumer, as a cancelled consumer does.
     */
    boolean reopen() {
        try {
            open();
            LOG.log(
                    System.Logger.Level.INFO,
                    "consumer of " + owner.processor().topology().workQueue() + ": channel reopened");
            return true;
        } catch (IOException | RuntimeException e) {
            if (e.getCause() instanceof ShutdownSignalException signal
                    && signal.getReason() instanceof AMQP.Channel.Close close
                    && close.getReplyCode() == AMQP.NOT_FOUND) {
                owner.stopOn(queueDeleted());
                return false;
            }
            LOG.log(
                    System.Logger.Level.WARNING,
                    "consumer of " + owner.processor().topology().workQueue() + ": reopening a channel failed: " + e
                            + (e.getCause() == null ? "" : " (" + e.getCause().getMessage() + ")"));
            return false;
        }
    }

    private IllegalStateException queueDeleted() {
        return new IllegalStateException(
                "the work queue " + owner.processor().topology().workQueue()
                        + " is gone (deleted?): the broker cancelled its consumer, or a channel cannot subscribe to it again;"
                        + " declare the queue and restart");
    }

    @Override
    public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties properties, byte[] body) {
        Channel c = channel;
        int lifeAtDelivery = life.get();
        Delivery delivery = new Delivery(envelope, properties, body);
        try {
            worker.execute(() -> handle(c, lifeAtDelivery, delivery));
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // closing: the delivery stays unacked and goes back to the queue with the channel
        }
    }

    private void handle(@Nullable Channel c, int lifeAtDelivery, Delivery delivery) {
        if (c == null || life.get() != lifeAtDelivery || !c.isOpen() || owner.stopping()) {
            return;
        }
        try {
            owner.processor().process(c, delivery);
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, e.getMessage());
        } catch (RuntimeException e) {
            LOG.log(
                    System.Logger.Level.ERROR,
                    "consumer of " + owner.processor().topology().workQueue()
                            + ": unexpected failure; the message goes back to the queue with the channel",
                    e);
            Channels.giveBack(c);
        } catch (Error e) {
            owner.crash(e, this);
        }
    }

    @Override
    public void handleShutdownSignal(String tag, ShutdownSignalException sig) {
        life.incrementAndGet();
        if (owner.stopping()) {
            return;
        }
        if (sig.isHardError()) {
            if (sig.isInitiatedByApplication()) {
                owner.stopOn(new IOException(
                        "the connection was closed by the application (" + sig.getMessage()
                                + "); close the consumer before its connection",
                        sig));
            } else if (!(owner.connection() instanceof Recoverable)) {
                owner.stopOn(IdempotentRabbitConsumer.notRecovering(sig));
            }
            return; // automatic recovery reopens this channel and its consumer
        }
        LOG.log(
                System.Logger.Level.WARNING,
                "consumer of " + owner.processor().topology().workQueue() + ": channel closed (" + sig.getMessage()
                        + "); reopening");
        owner.reopenLater(this);
    }

    @Override
    public void handleCancel(String tag) {
        life.incrementAndGet();
        owner.stopOn(queueDeleted());
        Channel c = channel;
        if (c != null) {
            Channels.abort(c);
        }
    }

    @Override
    public void handleRecoverOk(String tag) {
        consumerTag = tag;
    }

    @Override
    public void handleConsumeOk(String tag) {
        consumerTag = tag;
    }

    @Override
    public void handleCancelOk(String tag) {}

    /** Stops the broker's deliveries to this channel. */
    synchronized void cancel() {
        Channel c = channel;
        String tag = consumerTag;
        if (c != null && tag != null && c.isOpen()) {
            try {
                c.basicCancel(tag);
            } catch (IOException | RuntimeException e) {
                // the channel is going away anyway
            }
        }
        worker.shutdown();
    }

    /** Waits for the message in hand until {@code deadlineNanos}, then interrupts it, and closes the channel. */
    void finish(long deadlineNanos) {
        try {
            if (!worker.awaitTermination(Math.max(0, deadlineNanos - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                worker.shutdownNow();
            }
        } catch (InterruptedException e) {
            worker.shutdownNow();
            Thread.currentThread().interrupt();
        }
        abort();
    }

    /** Closes the channel at once: its unacked deliveries go back to the queue, the queued ones are not handled. */
    synchronized void abort() {
        life.incrementAndGet();
        worker.shutdown();
        Channel c = channel;
        if (c != null) {
            Channels.abort(c);
        }
    }
}
