package dev.idem.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import dev.idem.RetryPolicy;
import dev.idem.testsupport.TestServers;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeoutException;

/**
 * What the RabbitMQ proofs share: connections to the local server (or through a proxy), a topology with unique names
 * per test that is deleted afterwards. The business effect is idem-test-support's {@link
 * dev.idem.testsupport.PaymentBank}.
 */
final class RabbitFixture {
    static final Duration WAIT = Duration.ofSeconds(60);
    /** Retry a message every 100 ms, for up to 30 s. */
    static final RetryPolicy FAST_RETRY = steadyRetry(Duration.ofMillis(100), 300);

    private RabbitFixture() {}

    /** Retries {@code attempts} times, every {@code delay} exactly (no growth, no jitter). */
    static RetryPolicy steadyRetry(Duration delay, int attempts) {
        return RetryPolicy.builder()
                .initialDelay(delay)
                .multiplier(1.0)
                .maxDelay(delay)
                .maxAttempts(attempts)
                .jitter(0.0)
                .build();
    }

    static URI uri() {
        return URI.create(TestServers.rabbitmq().url());
    }

    /** A factory for the local server; {@code port} replaces the server's (e.g. a proxy's), 0 keeps it. */
    static ConnectionFactory factory(int port) {
        ConnectionFactory factory = new ConnectionFactory();
        try {
            factory.setUri(uri());
        } catch (Exception e) {
            throw new IllegalStateException("bad RabbitMQ URI " + uri(), e);
        }
        if (port != 0) {
            factory.setPort(port);
        }
        factory.setConnectionTimeout(5000);
        // The broker's first answer took over 5 s (half the default handshake timeout) at a load average of 23:
        // a test that only needs a connection then failed without testing anything.
        factory.setHandshakeTimeout(30_000);
        factory.setNetworkRecoveryInterval(200);
        return factory;
    }

    static Connection connect() {
        return connect(factory(0));
    }

    static Connection connect(ConnectionFactory factory) {
        try {
            return factory.newConnection("idem-rabbitmq-test");
        } catch (IOException | TimeoutException e) {
            throw new IllegalStateException("cannot connect to RabbitMQ at " + uri(), e);
        }
    }

    /** A declared topology with a unique work queue name; {@link Queues#close()} deletes it. */
    static Queues queues(String name) {
        return new Queues(RabbitTopology.forQueue(TestServers.uniquePrefix(name)));
    }

    /** The work queue's type: what {@link RabbitTopology#declare} makes, or a classic queue an operator declared. */
    enum WorkQueue {
        QUORUM,
        CLASSIC
    }

    /** {@link #queues(String)} with a work queue of {@code type} (still dead-lettering to the topology's exchange). */
    static Queues queues(String name, WorkQueue type) {
        Queues queues = queues(name + type.name().toLowerCase(java.util.Locale.ROOT));
        if (type == WorkQueue.CLASSIC) {
            try (Channel channel = queues.admin.createChannel()) {
                channel.queueDelete(queues.queue());
                channel.queueDeclare(
                        queues.queue(),
                        true,
                        false,
                        false,
                        java.util.Map.of("x-dead-letter-exchange", queues.topology.deadLetterExchange()));
            } catch (IOException | TimeoutException e) {
                throw new IllegalStateException("declaring the classic work queue " + queues.queue() + " failed", e);
            }
        }
        return queues;
    }

    /** The topology of one test on one admin connection; deleted on close. */
    static final class Queues implements AutoCloseable {
        final RabbitTopology topology;
        final Connection admin;

        Queues(RabbitTopology topology) {
            this.topology = topology;
            this.admin = connect();
            try (Channel channel = admin.createChannel()) {
                topology.declare(channel);
            } catch (IOException | TimeoutException e) {
                throw new IllegalStateException("declaring " + topology + " failed", e);
            }
        }

        String queue() {
            return topology.workQueue();
        }

        /** Publishes {@code body} to the work queue with {@code message-id} = {@code key}. */
        void publish(String key, String body) {
            publish(
                    new AMQP.BasicProperties.Builder()
                            .deliveryMode(2)
                            .messageId(key)
                            .build(),
                    body);
        }

        void publish(AMQP.BasicProperties props, String body) {
            try (Channel channel = admin.createChannel()) {
                channel.confirmSelect();
                channel.basicPublish("", queue(), true, props, body.getBytes(StandardCharsets.UTF_8));
                channel.waitForConfirmsOrDie(10_000);
            } catch (IOException | TimeoutException | InterruptedException e) {
                throw new IllegalStateException("publish to " + queue() + " failed", e);
            }
        }

        long depth(String queue) {
            try (Channel channel = admin.createChannel()) {
                return channel.queueDeclarePassive(queue).getMessageCount();
            } catch (IOException | TimeoutException e) {
                throw new IllegalStateException("cannot read the depth of " + queue, e);
            }
        }

        /** How many consumers the broker has on {@code queue}. */
        long consumers(String queue) {
            try (Channel channel = admin.createChannel()) {
                return channel.queueDeclarePassive(queue).getConsumerCount();
            } catch (IOException | TimeoutException e) {
                throw new IllegalStateException("cannot read the consumers of " + queue, e);
            }
        }

        /** Takes every message out of {@code queue} (acked). */
        List<GetResponse> drain(String queue) {
            List<GetResponse> all = new ArrayList<>();
            try (Channel channel = admin.createChannel()) {
                for (GetResponse r = channel.basicGet(queue, true); r != null; r = channel.basicGet(queue, true)) {
                    all.add(r);
                }
            } catch (IOException | TimeoutException e) {
                throw new IllegalStateException("cannot drain " + queue, e);
            }
            return all;
        }

        @Override
        public void close() {
            try (Channel channel = admin.createChannel()) {
                channel.queueDelete(topology.workQueue());
                channel.queueDelete(topology.retryQueue());
                channel.queueDelete(topology.deadLetterQueue());
                channel.exchangeDelete(topology.deadLetterExchange());
            } catch (IOException | TimeoutException e) {
                throw new IllegalStateException("deleting " + topology + " failed", e);
            } finally {
                try {
                    admin.close();
                } catch (IOException e) {
                    // best effort
                }
            }
        }
    }

    static String text(byte[] body) {
        return new String(body, StandardCharsets.UTF_8);
    }
}
