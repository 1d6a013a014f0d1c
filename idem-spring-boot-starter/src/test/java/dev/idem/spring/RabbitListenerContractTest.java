package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import dev.idem.DeadLetterException;
import dev.idem.RetryPolicy;
import dev.idem.rabbitmq.DeliveryProcessor;
import dev.idem.rabbitmq.RabbitTopology;
import dev.idem.spi.KeyBytes;
import dev.idem.testkit.AdapterContract;
import dev.idem.testkit.TestMessage;
import dev.idem.testsupport.TestServers;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.config.SimpleRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer;
import org.springframework.amqp.rabbit.listener.MethodRabbitListenerEndpoint;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Configuration;
import org.springframework.messaging.handler.annotation.support.DefaultMessageHandlerMethodFactory;

/**
 * The {@link AdapterContract} for an {@code @Idempotent} {@code @RabbitListener} on Spring Boot's container factory
 * with the starter's advice, on the local RabbitMQ. The contract's ledger plays the guard: the listener throws what an
 * {@code @Idempotent} method throws for the ledger's outcome ({@code IdempotentRetryLaterException} for a retry, a
 * {@link DeadLetterException} for a rejection or a missing key, the handler's own exception as it is). The
 * idempotency key is header {@value #KEY_HEADER}, as bytes. Each consumer has a connection of its own: a crash closes
 * it, so that what the consumer held goes back to the queue and nothing it does after is acknowledged.
 */
@Execution(ExecutionMode.CONCURRENT) // each scenario has its own destination, listener containers and ledger
class RabbitListenerContractTest extends AdapterContract {
    static final String KEY_HEADER = "idem-key";

    static ConfigurableApplicationContext context;

    private final AtomicInteger consumerIds = new AtomicInteger();
    private final List<GetResponse> deadLetters = new ArrayList<>();
    private final List<CachingConnectionFactory> connections = new ArrayList<>();
    private RabbitTopology topology = RabbitTopology.forQueue("unset");
    /** The producer's connection, kept open so that a message is published in a round trip. */
    private @Nullable Connection producer;

    private @Nullable Channel producerChannel;

    @BeforeAll
    static void startTheApplication() {
        URI rabbit = URI.create(TestServers.rabbitmq().url());
        context = new SpringApplicationBuilder(ContractApp.class)
                .properties(
                        "spring.datasource.url=jdbc:h2:mem:" + TestServers.uniquePrefix("rabbit_contract")
                                + ";DB_CLOSE_DELAY=-1",
                        "spring.liquibase.enabled=false",
                        "spring.rabbitmq.host=" + rabbit.getHost(),
                        "spring.rabbitmq.port=" + rabbit.getPort(),
                        "spring.rabbitmq.username=guest",
                        "spring.rabbitmq.password=guest",
                        "idem.rabbit.initial-delay="
                                + RETRY_POLICY.initialDelay().toMillis() + "ms",
                        "idem.rabbit.multiplier=" + RETRY_POLICY.multiplier(),
                        "idem.rabbit.max-delay=" + RETRY_POLICY.maxDelay().toMillis() + "ms",
                        "idem.rabbit.max-attempts=" + RETRY_POLICY.maxAttempts(),
                        "idem.rabbit.jitter=" + RETRY_POLICY.jitter())
                .run();
    }

    @AfterAll
    static void stopTheApplication() {
        context.close();
    }

    @Override
    protected void createDestination(String name) throws Exception {
        topology = RabbitTopology.forQueue(TestServers.uniquePrefix(name));
        try (Connection c = RabbitQueues.connection();
                Channel channel = c.createChannel()) {
            topology.declare(channel);
        }
        producer = RabbitQueues.connection();
        producerChannel = producer.createChannel();
        producerChannel.confirmSelect();
    }

    @Override
    protected void deleteDestination() throws Exception {
        connections.forEach(CachingConnectionFactory::destroy);
        if (producer != null) {
            producer.close();
        }
        try (Connection c = RabbitQueues.connection();
                Channel channel = c.createChannel()) {
            channel.queueDelete(topology.workQueue());
            channel.queueDelete(topology.retryQueue());
            channel.queueDelete(topology.deadLetterQueue());
            channel.exchangeDelete(topology.deadLetterExchange());
        }
    }

    @Override
    protected RunningConsumer startConsumer(ContractHandler handler, RetryPolicy retryPolicy) throws Exception {
        assertThat(context.getBean(IdemProperties.class).getRabbit().retryPolicy())
                .isEqualTo(retryPolicy);
        MethodRabbitListenerEndpoint endpoint = new MethodRabbitListenerEndpoint();
        endpoint.setId(topology.workQueue() + "-consumer-" + consumerIds.incrementAndGet());
        endpoint.setQueueNames(topology.workQueue());
        endpoint.setBean(new ContractListener(handler));
        endpoint.setMethod(ContractListener.class.getMethod("onMessage", Message.class));
        DefaultMessageHandlerMethodFactory methods = new DefaultMessageHandlerMethodFactory();
        methods.setBeanFactory(context.getBeanFactory());
        methods.afterPropertiesSet();
        endpoint.setMessageHandlerMethodFactory(methods);
        AbstractMessageListenerContainer container = context.getBean(
                        "rabbitListenerContainerFactory", SimpleRabbitListenerContainerFactory.class)
                .createListenerContainer(endpoint);
        CachingConnectionFactory connection =
                new CachingConnectionFactory(URI.create(TestServers.rabbitmq().url()));
        synchronized (connections) {
            connections.add(connection);
        }
        container.setConnectionFactory(connection);
        container.afterPropertiesSet();
        container.start();
        return RunningConsumer.of(container::stop, () -> {
            connection.resetConnection(); // what the consumer held goes back to the queue; its acks fail
            CompletableFuture.runAsync(container::stop);
        });
    }

    @Override
    protected void publish(TestMessage message) throws Exception {
        Map<String, Object> headers = new HashMap<>(message.headers());
        if (message.keyBytes() != null) {
            headers.put(KEY_HEADER, message.keyBytes());
        }
        publish(topology.workQueue(), headers, message.payload());
    }

    private synchronized void publish(String queue, Map<String, Object> headers, byte[] body) throws Exception {
        Channel channel = Objects.requireNonNull(producerChannel);
        channel.basicPublish(
                "",
                queue,
                new AMQP.BasicProperties.Builder()
                        .headers(headers)
                        .deliveryMode(2)
                        .build(),
                body);
        channel.waitForConfirmsOrDie(10_000);
    }

    @Override
    protected synchronized List<DeadLetter> deadLetters() throws Exception {
        try (Connection c = RabbitQueues.connection();
                Channel channel = c.createChannel()) {
            for (GetResponse r = channel.basicGet(topology.deadLetterQueue(), true);
                    r != null;
                    r = channel.basicGet(topology.deadLetterQueue(), true)) {
                deadLetters.add(r);
            }
        }
        return deadLetters.stream()
                .map(r -> {
                    Map<String, Object> headers = r.getProps().getHeaders();
                    Object key = headers.get(KEY_HEADER);
                    return new DeadLetter(
                            key instanceof byte[] b ? KeyBytes.exactKey(b) : null,
                            String.valueOf(headers.get(DeliveryProcessor.DLQ_REASON)));
                })
                .toList();
    }

    @Override
    protected void replayDeadLetters() throws Exception {
        List<GetResponse> dead;
        synchronized (this) {
            deadLetters();
            dead = List.copyOf(deadLetters);
        }
        for (GetResponse r : dead) {
            publish(topology.workQueue(), r.getProps().getHeaders(), r.getBody());
        }
    }

    @Override
    protected Map<String, byte[]> hostileHeaders() {
        return Map.of(
                DeliveryProcessor.ATTEMPTS_HEADER, bytes("999"),
                DeliveryProcessor.DLQ_REASON, bytes("set by the producer"),
                DeliveryProcessor.DLQ_OUTCOME, bytes("REJECTED"),
                DeliveryProcessor.DLQ_QUEUE, bytes(topology.workQueue()));
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** The guarded listener: what an {@code @Idempotent} method throws for the ledger's answer. */
    public static class ContractListener {
        private final ContractHandler handler;

        ContractListener(ContractHandler handler) {
            this.handler = handler;
        }

        @Idempotent(namespace = "contract", key = "#message.messageProperties.headers['" + KEY_HEADER + "']")
        public void onMessage(Message message) throws Exception {
            Object key = message.getMessageProperties().getHeaders().get(KEY_HEADER);
            ListenerContractOutcomes.handle(
                    handler, KEY_HEADER, key instanceof byte[] bytes ? bytes : null, message.getBody());
        }
    }

    /** Spring Boot with the starter, no listener of its own: the contract starts its consumers. */
    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class ContractApp {}
}
