package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.DeadLetterException;
import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import dev.idem.rocketmq.IdempotentRocketMQ;
import dev.idem.rocketmq.RocketMQProducers;
import dev.idem.spi.KeyBytes;
import dev.idem.testkit.AdapterContract;
import dev.idem.testkit.Routing;
import dev.idem.testkit.TestMessage;
import dev.idem.testsupport.EmbeddedRocketMQ;
import dev.idem.testsupport.RocketMQSend;
import dev.idem.testsupport.TestServers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.spring.annotation.RocketMQMessageListener;
import org.apache.rocketmq.spring.core.RocketMQListener;
import org.apache.rocketmq.spring.core.RocketMQPushConsumerLifecycleListener;
import org.apache.rocketmq.spring.support.DefaultRocketMQListenerContainer;
import org.apache.rocketmq.spring.support.RocketMQMessageListenerContainerRegistrar;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.annotation.AnnotationUtils;

/**
 * The {@link AdapterContract} for an {@code @Idempotent} {@code @RocketMQMessageListener}: rocketmq-spring's own
 * container, registered by its own registrar (so every bean post-processor sees it, the starter's included), on the
 * in-process broker. The contract's ledger plays the guard: the listener throws what an {@code @Idempotent} method
 * throws for the ledger's outcome ({@code IdempotentRetryLaterException} for a retry, a {@link DeadLetterException}
 * for a rejection, a missing key or a key that is not exact UTF-8 text, the handler's own exception as it is). The key
 * is the user property {@link RocketMQProducers#KEY_PROPERTY}; a copy's route is the queue it is sent to. A crash is a
 * shutdown that does not wait for the running handler: the offset persisted is the unfinished message's, as after a
 * kill. Three scenarios run at a time, each with its own topic, group, producer and containers.
 */
@Execution(ExecutionMode.CONCURRENT)
class RocketMQListenerContractTest extends AdapterContract {
    static final EmbeddedRocketMQ BROKER = EmbeddedRocketMQ.shared();
    private static final int QUEUES = 2;
    /** RocketMQ's own bound of the stock container: reconsumed this often, a message goes to {@code %DLQ%}. */
    private static final int STOCK_MAX_RECONSUME_TIMES = 16;

    static ConfigurableApplicationContext context;

    private final AtomicInteger consumerIds = new AtomicInteger();
    private final Routing routing = new Routing(QUEUES);
    private String topic = "";
    private @Nullable DefaultMQProducer producer;

    @BeforeAll
    static void startTheApplication() {
        context = new SpringApplicationBuilder(ContractApp.class)
                .properties(
                        "spring.datasource.url=jdbc:h2:mem:" + TestServers.uniquePrefix("rocketmq_contract")
                                + ";DB_CLOSE_DELAY=-1",
                        "spring.liquibase.enabled=false",
                        "rocketmq.name-server=" + BROKER.nameServer(),
                        "idem.rocketmq.initial-delay="
                                + RETRY_POLICY.initialDelay().toMillis() + "ms",
                        "idem.rocketmq.multiplier=" + RETRY_POLICY.multiplier(),
                        "idem.rocketmq.max-delay=" + RETRY_POLICY.maxDelay().toMillis() + "ms",
                        "idem.rocketmq.max-attempts=" + RETRY_POLICY.maxAttempts(),
                        "idem.rocketmq.jitter=" + RETRY_POLICY.jitter())
                .run();
    }

    @AfterAll
    static void stopTheApplication() {
        context.close();
    }

    @Override
    protected void createDestination(String name) throws Exception {
        topic = TestServers.uniquePrefix(name.substring(0, Math.min(40, name.length())));
        BROKER.createTopic(topic, QUEUES);
        BROKER.createGroupTopics(group());
        DefaultMQProducer p = new DefaultMQProducer(topic + "-producer");
        p.setNamesrvAddr(BROKER.nameServer());
        p.setInstanceName(topic + "-producer");
        RocketMQProducers.applyRecommendedSettings(p);
        p.start();
        producer = p;
    }

    @Override
    protected void deleteDestination() {
        if (producer != null) {
            producer.shutdown();
        }
    }

    private String group() {
        return topic + "-g";
    }

    @Override
    protected RunningConsumer startConsumer(ContractHandler handler, RetryPolicy retryPolicy) {
        assertThat(context.getBean(IdemProperties.class).getRocketmq().retryPolicy())
                .isEqualTo(retryPolicy);
        String name = topic + "-consumer-" + consumerIds.incrementAndGet();
        RocketMQMessageListener annotation = AnnotationUtils.synthesizeAnnotation(
                Map.of("topic", topic, "consumerGroup", group()), RocketMQMessageListener.class, null);
        DefaultRocketMQListenerContainer container = register(new ContractListener(handler, name), annotation);
        container.start();
        return RunningConsumer.of(container::stop, () -> {
            container.getConsumer().setAwaitTerminationMillisWhenShutdown(1);
            container.stop();
        });
    }

    /**
     * Registers a container for {@code listener} as rocketmq-spring does, and finds it among the context's containers:
     * one scenario at a time, so that no scenario's lookup runs while another's registration changes the context.
     */
    private static DefaultRocketMQListenerContainer register(
            ContractListener listener, RocketMQMessageListener annotation) {
        synchronized (RocketMQListenerContractTest.class) {
            context.getBean(RocketMQMessageListenerContainerRegistrar.class)
                    .registerContainer(listener.instance, listener, annotation);
            return context.getBeansOfType(DefaultRocketMQListenerContainer.class).values().stream()
                    .filter(c -> c.getRocketMQListener() == listener)
                    .findFirst()
                    .orElseThrow();
        }
    }

    @Override
    protected void publish(TestMessage message) throws Exception {
        Message m = new Message(topic, message.payload());
        if (message.keyBytes() != null) {
            // What the broker stores for any producer: properties are text, decoded from UTF-8.
            RocketMQProducers.withKey(m, new String(message.keyBytes(), StandardCharsets.UTF_8));
        }
        message.headers()
                .forEach((name, value) ->
                        MessageAccessor.putProperty(m, name, new String(value, StandardCharsets.UTF_8)));
        send(m, routing.slotOf(message));
    }

    private void send(Message message, int queue) throws Exception {
        RocketMQSend.toQueue(Objects.requireNonNull(producer), message, queue);
    }

    @Override
    protected List<DeadLetter> deadLetters() throws Exception {
        return BROKER.messages(MixAll.getDLQTopic(group())).stream()
                .map(dead -> new DeadLetter(
                        dead.getUserProperty(RocketMQProducers.KEY_PROPERTY),
                        String.valueOf(dead.getUserProperty(IdempotentRocketMQ.DLQ_REASON))))
                .toList();
    }

    /** RocketMQ properties are text: every client's bytes reach the consumer decoded from UTF-8. */
    @Override
    protected boolean carriesKeyBytes() {
        return false;
    }

    /** As an operator's tool does: each dead-letter copy sent back to the topic with every property it carries. */
    @Override
    protected void replayDeadLetters() throws Exception {
        for (MessageExt dead : BROKER.messages(MixAll.getDLQTopic(group()))) {
            Message replay = new Message(topic, dead.getBody());
            MessageAccessor.setProperties(replay, new HashMap<>(dead.getProperties()));
            send(replay, routing.next());
        }
    }

    /**
     * idem-rocketmq's own property names, and RocketMQ's own properties of retries and dead letters, with values that
     * would count the message as tried to the bound, or route its copies elsewhere.
     */
    @Override
    protected Map<String, byte[]> hostileHeaders() {
        Map<String, String> hostile = new HashMap<>();
        hostile.put("IDEM_WAITS", "0:2147483647");
        hostile.put(IdempotentRocketMQ.DLQ_ATTEMPTS, "999");
        hostile.put(IdempotentRocketMQ.DLQ_OUTCOME, "REJECTED");
        hostile.put(IdempotentRocketMQ.DLQ_REASON, "gave up after 999 attempts");
        hostile.put(MessageConst.PROPERTY_RECONSUME_TIME, "999");
        hostile.put(MessageConst.PROPERTY_MAX_RECONSUME_TIMES, "1");
        hostile.put(MessageConst.PROPERTY_RETRY_TOPIC, "%DLQ%" + group());
        hostile.put(MessageConst.PROPERTY_ORIGIN_MESSAGE_ID, "0A0000000000000000000000000000FF");
        hostile.put(MessageConst.PROPERTY_REAL_TOPIC, "%RETRY%" + group());
        hostile.put(MessageConst.PROPERTY_REAL_QUEUE_ID, "0");
        Map<String, byte[]> headers = new HashMap<>();
        hostile.forEach((name, value) -> headers.put(name, value.getBytes(StandardCharsets.UTF_8)));
        return headers;
    }

    /**
     * Issue 22: the stock container returned {@code RECONSUME_LATER} for an {@code IN_PROGRESS} message like for any
     * failure, and after {@code maxReconsumeTimes} (16) the broker moved it to {@code %DLQ%}, though its key was only
     * held elsewhere. Held beyond that bound, it is never dead-lettered, and applied once when the hold ends.
     */
    @Test
    void inProgress_heldBeyondTheStockContainersReconsumeBound_isNeverDeadLettered_andAppliedOnceAfterwards()
            throws Exception {
        start();
        ledger.holdFromOutside("held-long");
        publish(TestMessage.of("held-long", "apply"));

        await().atMost(Duration.ofSeconds(180)).until(() -> {
            assertThat(deadLetters()).as("dead letters while the key is held").isEmpty();
            return ledger.contended("held-long") > STOCK_MAX_RECONSUME_TIMES + 1;
        });
        ledger.endOutsideHold("held-long");

        await().atMost(Duration.ofSeconds(60)).until(() -> ledger.effects("held-long") == 1);
        assertThat(deadLetters()).isEmpty();
        assertThat(ledger.effects("held-long")).isEqualTo(1);
    }

    /**
     * The guarded listener: what an {@code @Idempotent} method throws for the ledger's answer. Its consumer starts at
     * the first offset, in a client instance of its own (own connections), its offsets persisted every 200 ms.
     */
    public static class ContractListener
            implements RocketMQListener<MessageExt>, RocketMQPushConsumerLifecycleListener {
        private final ContractHandler handler;
        private final String instance;

        ContractListener(ContractHandler handler, String instance) {
            this.handler = handler;
            this.instance = instance;
        }

        @Override
        public void prepareStart(DefaultMQPushConsumer consumer) {
            consumer.setInstanceName(instance);
            consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            consumer.setPersistConsumerOffsetInterval(200);
            consumer.setHeartbeatBrokerInterval(1000);
            consumer.setPollNameServerInterval(1000);
        }

        @Override
        @Idempotent(namespace = "contract", key = "#message.getUserProperty('" + RocketMQProducers.KEY_PROPERTY + "')")
        public void onMessage(MessageExt message) {
            String property = message.getUserProperty(RocketMQProducers.KEY_PROPERTY);
            if (property == null) {
                throw new DeadLetterException(
                        "no idempotency key: property " + RocketMQProducers.KEY_PROPERTY + " is missing", null);
            }
            String key;
            try {
                key = KeyBytes.exactText(property);
            } catch (IllegalArgumentException e) {
                throw new DeadLetterException("idempotency key unreadable: " + e.getMessage(), e);
            }
            Outcome outcome;
            try {
                outcome = handler.handle(key, message.getBody());
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
            switch (outcome.action()) {
                case ACK -> {}
                case RETRY -> throw IdempotentRetryLaterException.of("contract", outcome);
                case DEAD_LETTER ->
                    throw new DeadLetterException(
                            outcome.reason(), outcome.cause().orElse(null));
            }
        }
    }

    /** Spring Boot with the starter and rocketmq-spring, no listener of its own: the contract starts its consumers. */
    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class ContractApp {}
}
