package dev.idem.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ShutdownSignalException;
import dev.idem.ConfigurationException;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The queues and exchange a guarded consumer of one work queue uses, by name:
 *
 * <ul>
 *   <li>the <b>work queue</b> ({@code payments}): what the consumer reads; its {@code x-dead-letter-exchange} is the
 *       dead-letter exchange, so a message the broker itself dead-letters (e.g. a {@code basic.reject}) is kept too;
 *   <li>the <b>retry queue</b> ({@code payments.retry}): no consumer; a message to retry is published here with a
 *       per-message TTL ({@code expiration}) and, when it expires, dead-lettered back to the work queue through the
 *       default exchange ({@code x-dead-letter-routing-key} = the work queue). Quorum, with {@code
 *       x-dead-letter-strategy=at-least-once} and {@code x-overflow=reject-publish}, so that the way back is not lost;
 *   <li>the <b>dead-letter exchange</b> ({@code payments.dlx}, fanout) and the <b>dead-letter queue</b> bound to it
 *       ({@code payments.dlq}): rejected messages, with the reason in their headers.
 * </ul>
 *
 * <p>{@link #declare(Channel)} declares all four (durable, quorum queues); {@link #verify(Connection)} checks that they
 * exist and that the retry queue has the arguments that bring a copy back, for topologies declared by an operator or a
 * deployment tool. Immutable and thread-safe.
 */
public final class RabbitTopology {
    private final String workQueue;
    private final String retryQueue;
    private final String deadLetterExchange;
    private final String deadLetterQueue;

    private RabbitTopology(Builder b) {
        this.workQueue = b.workQueue;
        this.retryQueue = b.retryQueue;
        this.deadLetterExchange = b.deadLetterExchange;
        this.deadLetterQueue = b.deadLetterQueue;
    }

    /** The default names for {@code workQueue}: {@code <q>.retry}, {@code <q>.dlx}, {@code <q>.dlq}. */
    public static RabbitTopology forQueue(String workQueue) {
        return builder(workQueue).build();
    }

    public static Builder builder(String workQueue) {
        return new Builder(workQueue);
    }

    public String workQueue() {
        return workQueue;
    }

    public String retryQueue() {
        return retryQueue;
    }

    public String deadLetterExchange() {
        return deadLetterExchange;
    }

    public String deadLetterQueue() {
        return deadLetterQueue;
    }

    /**
     * Declares the work queue, the retry queue, the dead-letter exchange and queue, and the binding. Idempotent; fails
     * (and closes {@code channel}, as RabbitMQ does) when a queue of the same name exists with other arguments.
     */
    public void declare(Channel channel) throws IOException {
        channel.exchangeDeclare(deadLetterExchange, BuiltinExchangeType.FANOUT, true);
        channel.queueDeclare(deadLetterQueue, true, false, false, Map.of("x-queue-type", "quorum"));
        channel.queueBind(deadLetterQueue, deadLetterExchange, "");
        channel.queueDeclare(
                workQueue,
                true,
                false,
                false,
                Map.of("x-queue-type", "quorum", "x-dead-letter-exchange", deadLetterExchange));
        channel.queueDeclare(retryQueue, true, false, false, retryQueueArguments());
    }

    /**
     * Checks that the queues and the exchange exist (passive declarations, each on a channel of its own), and that the
     * retry queue brings a copy back: it must be declared with the arguments {@link #declare} gives it (checked by
     * declaring it again with them, which creates nothing, and which needs the configure permission on it). A retry
     * queue without {@code x-dead-letter-exchange} / {@code x-dead-letter-routing-key} takes every copy and discards it
     * when its TTL ends. Arguments set by a policy are not seen: set them on the queue.
     *
     * @throws ConfigurationException naming what is missing or wrong and how to fix it
     */
    public void verify(Connection connection) throws IOException {
        requireQueue(connection, workQueue);
        requireQueue(connection, deadLetterQueue);
        try (Channel channel = connection.createChannel()) {
            channel.exchangeDeclarePassive(deadLetterExchange);
        } catch (IOException e) {
            throw missing("exchange", deadLetterExchange, e);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new IOException("closing the channel used to check " + deadLetterExchange + " timed out", e);
        }
        verifyRetryQueue(connection);
    }

    /** The retry queue part of {@link #verify}: it exists, with the arguments that bring a copy back. */
    void verifyRetryQueue(Connection connection) throws IOException {
        requireQueue(connection, retryQueue);
        try (Channel channel = connection.createChannel()) {
            channel.queueDeclare(retryQueue, true, false, false, retryQueueArguments());
        } catch (IOException e) {
            throw new ConfigurationException(
                    "queue '" + retryQueue + "', the retry queue of the guarded consumer of '" + workQueue + "', is not"
                            + " declared with the arguments that bring a retry copy back to '" + workQueue + "' (the"
                            + " broker: " + brokerReply(e) + "). It must be durable with " + retryQueueArguments()
                            + "; without x-dead-letter-exchange and x-dead-letter-routing-key every retry copy is"
                            + " discarded when its TTL ends. Delete it once empty and declare the topology with"
                            + " RabbitTopology.declare(channel) or IdempotentRabbitConsumer.Builder.declareTopology(true),"
                            + " or as docs/rabbitmq.md describes (as queue arguments: a policy is not seen); a user"
                            + " without the configure permission on it cannot run this check",
                    e);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new IOException("closing the channel used to check " + retryQueue + " timed out", e);
        }
    }

    /** What makes the retry queue work: dead-letter at its TTL's end to the work queue, at least once. */
    private Map<String, Object> retryQueueArguments() {
        Map<String, Object> args = new LinkedHashMap<>();
        args.put("x-queue-type", "quorum");
        args.put("x-dead-letter-exchange", "");
        args.put("x-dead-letter-routing-key", workQueue);
        args.put("x-dead-letter-strategy", "at-least-once");
        args.put("x-overflow", "reject-publish");
        return args;
    }

    private static String brokerReply(IOException e) {
        if (e.getCause() instanceof ShutdownSignalException signal
                && signal.getReason() instanceof AMQP.Channel.Close close) {
            return close.getReplyText();
        }
        return String.valueOf(e.getMessage());
    }

    private void requireQueue(Connection connection, String queue) throws IOException {
        try (Channel channel = connection.createChannel()) {
            channel.queueDeclarePassive(queue);
        } catch (IOException e) {
            throw missing("queue", queue, e);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new IOException("closing the channel used to check " + queue + " timed out", e);
        }
    }

    private ConfigurationException missing(String what, String name, IOException e) {
        return new ConfigurationException(
                what + " '" + name + "' of the guarded consumer of '" + workQueue + "' does not exist ("
                        + e.getCause() + "): declare the topology with RabbitTopology.declare(channel) or"
                        + " IdempotentRabbitConsumer.Builder.declareTopology(true), or have it declared as"
                        + " docs/rabbitmq.md describes",
                e);
    }

    @Override
    public String toString() {
        return "RabbitTopology[work=" + workQueue + ", retry=" + retryQueue + ", dlx=" + deadLetterExchange + ", dlq="
                + deadLetterQueue + "]";
    }

    /** Builds a {@link RabbitTopology}; every name defaults from the work queue's. */
    public static final class Builder {
        private final String workQueue;
        private String retryQueue;
        private String deadLetterExchange;
        private String deadLetterQueue;

        private Builder(String workQueue) {
            this.workQueue = name("workQueue", workQueue);
            this.retryQueue = workQueue + ".retry";
            this.deadLetterExchange = workQueue + ".dlx";
            this.deadLetterQueue = workQueue + ".dlq";
        }

        /** Default {@code <workQueue>.retry}. */
        public Builder retryQueue(String name) {
            this.retryQueue = name("retryQueue", name);
            return this;
        }

        /** Default {@code <workQueue>.dlx}. */
        public Builder deadLetterExchange(String name) {
            this.deadLetterExchange = name("deadLetterExchange", name);
            return this;
        }

        /** Default {@code <workQueue>.dlq}. */
        public Builder deadLetterQueue(String name) {
            this.deadLetterQueue = name("deadLetterQueue", name);
            return this;
        }

        public RabbitTopology build() {
            if (retryQueue.equals(workQueue)
                    || deadLetterQueue.equals(workQueue)
                    || retryQueue.equals(deadLetterQueue)) {
                throw new ConfigurationException("the work, retry and dead-letter queues must be three different"
                        + " queues, got " + workQueue + ", " + retryQueue + ", " + deadLetterQueue);
            }
            return new RabbitTopology(this);
        }

        private static String name(String what, String value) {
            Objects.requireNonNull(value, what);
            if (value.isBlank() || value.length() > 255) {
                throw new ConfigurationException(what + " must be 1 to 255 characters, not blank; got '" + value + "'");
            }
            return value;
        }
    }
}
