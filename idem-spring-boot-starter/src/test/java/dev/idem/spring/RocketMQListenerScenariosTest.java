package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.DeadLetterException;
import dev.idem.rocketmq.IdempotentRocketMQ;
import dev.idem.rocketmq.RocketMQProducers;
import dev.idem.testsupport.EmbeddedRocketMQ;
import dev.idem.testsupport.TestServers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.spring.annotation.ConsumeMode;
import org.apache.rocketmq.spring.annotation.RocketMQMessageListener;
import org.apache.rocketmq.spring.core.RocketMQListener;
import org.apache.rocketmq.spring.core.RocketMQPushConsumerLifecycleListener;
import org.apache.rocketmq.spring.support.DefaultRocketMQListenerContainer;
import org.apache.rocketmq.spring.support.RocketMQMessageListenerContainerRegistrar;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.annotation.AnnotationUtils;

/**
 * {@code @RocketMQMessageListener} listeners whose {@code onMessage} is a real {@code @Idempotent} bean method (the
 * interceptor reads the key with its SpEL, the lease store on H2 holds it), registered as rocketmq-spring registers
 * them, on the in-process broker: what the {@link RocketMQListenerContractTest}'s listener, which plays the guard
 * itself, cannot show.
 */
class RocketMQListenerScenariosTest {
    static final EmbeddedRocketMQ BROKER = EmbeddedRocketMQ.shared();
    static ConfigurableApplicationContext context;

    private final List<DefaultRocketMQListenerContainer> containers = new CopyOnWriteArrayList<>();
    private String topic = "";
    private DefaultMQProducer producer;

    @BeforeAll
    static void startTheApplication() {
        context = new SpringApplicationBuilder(ScenarioApp.class)
                .properties(
                        "spring.datasource.url=jdbc:h2:mem:" + TestServers.uniquePrefix("rocketmq_scenarios")
                                + ";DB_CLOSE_DELAY=-1",
                        "spring.liquibase.enabled=false",
                        "rocketmq.name-server=" + BROKER.nameServer(),
                        "idem.rocketmq.initial-delay=20ms",
                        "idem.rocketmq.max-delay=200ms",
                        "idem.rocketmq.max-attempts=3",
                        "idem.rocketmq.jitter=0",
                        // An Error is a crash that keeps its claim until the lease ends: a short one for the test.
                        "idem.lease=3s")
                .run();
    }

    @AfterAll
    static void stopTheApplication() {
        context.close();
    }

    void freshTopic(TestInfo test) throws Exception {
        String name = test.getTestMethod().orElseThrow().getName();
        topic = TestServers.uniquePrefix(name.substring(0, Math.min(30, name.length())));
        BROKER.createTopic(topic, 1);
        BROKER.createGroupTopics(group());
        producer = RocketMQProducers.applyRecommendedSettings(new DefaultMQProducer(topic + "-producer"));
        producer.setNamesrvAddr(BROKER.nameServer());
        producer.setInstanceName(topic + "-producer");
        producer.start();
    }

    @AfterEach
    void stopEverything() {
        containers.forEach(DefaultRocketMQListenerContainer::stop);
        if (producer != null) {
            producer.shutdown();
        }
    }

    @Test
    void keysThatDifferOnlyInBytesThatAreNotUtf8_areDeadLetteredWithTheReason_neitherTakenForTheOther(TestInfo test)
            throws Exception {
        freshTopic(test);
        KeysListener listener = new KeysListener();
        start(listener, Map.of());

        // What the broker stores for any producer's bytes k-0xFE and k-0xFF: properties are text decoded from UTF-8.
        send(key("k-") + new String(new byte[] {(byte) 0xFE}, StandardCharsets.UTF_8), "first");
        send(key("k-") + new String(new byte[] {(byte) 0xFF}, StandardCharsets.UTF_8), "second");

        await().atMost(Duration.ofSeconds(30))
                .until(() -> !listener.effects.isEmpty() || deadLetters().size() == 2);
        assertThat(listener.effects).as("neither applied as the other's key").isEmpty();
        assertThat(deadLetters())
                .allSatisfy(dead -> assertThat(dead.getProperty(IdempotentRocketMQ.DLQ_REASON))
                        .contains("U+FFFD"));
    }

    /**
     * The annotation's default awaitTerminationMillisWhenShutdown (1000 ms) must not cut a running handler short: the
     * plain adapter lets handlers end for 30 s.
     */
    @Test
    void shutdownWhileAHandlerRunsLongerThanASecond_letsItEnd_uninterrupted(TestInfo test) throws Exception {
        freshTopic(test);
        SlowListener listener = new SlowListener();
        DefaultRocketMQListenerContainer container = start(listener, Map.of());
        send(key("slow-1"), "apply");
        assertThat(listener.started.await(30, TimeUnit.SECONDS)).isTrue();

        ExecutorService stopper = Executors.newSingleThreadExecutor();
        try {
            Future<?> stopping = stopper.submit((Runnable) container::stop);
            // Beyond the annotation's default of 1000 ms.
            await().pollDelay(Duration.ofMillis(1500))
                    .atMost(Duration.ofSeconds(5))
                    .until(() -> true);
            listener.release.countDown();
            stopping.get(60, TimeUnit.SECONDS);
        } finally {
            stopper.shutdownNow();
        }
        assertThat(listener.interrupted.get())
                .as("the shutdown interrupted the handler")
                .isZero();
        assertThat(listener.effects).containsEntry(key("slow-1"), 1);
    }

    /** Orderly: a rejection and a failure past the bound go to %DLQ% with their reasons; the queue goes on. */
    @Test
    void orderly_aPoisonAndAFailingMessage_areDeadLetteredWithTheirReasons_andTheQueueGoesOn(TestInfo test)
            throws Exception {
        freshTopic(test);
        ScriptedListener listener = new ScriptedListener();
        start(listener, Map.of("consumeMode", ConsumeMode.ORDERLY));
        send(key("o-poison"), "reject");
        send(key("o-broken"), "fail");
        send(key("o-fine"), "apply");

        await().atMost(Duration.ofSeconds(30)).until(() -> listener.effects.containsKey(key("o-fine")));
        await().atMost(Duration.ofSeconds(10)).until(() -> deadLetters().size() >= 2);
        assertThat(deadLetters()).hasSize(2);
        assertThat(reasonOf(key("o-poison"))).contains("scripted rejection");
        assertThat(reasonOf(key("o-broken"))).contains("gave up after 3 attempts");
        assertThat(listener.calls).containsEntry(key("o-poison"), 1).containsEntry(key("o-broken"), 3);
        assertThat(listener.effects).containsOnlyKeys(key("o-fine"));
    }

    /** A body the listener's type cannot be made from: dead-lettered at once with the reason, never acked. */
    @Test
    void aBodyThatCannotBeConverted_isDeadLetteredAtOnce_withTheReason(TestInfo test) throws Exception {
        freshTopic(test);
        PaymentListener listener = new PaymentListener();
        start(listener, Map.of());
        send(key("c-bad"), "{not json");
        send(key("c-good"), "{\"id\":\"" + key("c-good") + "\",\"amount\":5}");

        await().atMost(Duration.ofSeconds(30))
                .until(() -> listener.effects.containsKey(key("c-good"))
                        && !deadLetters().isEmpty());
        assertThat(deadLetters()).hasSize(1);
        assertThat(reasonOf(key("c-bad"))).contains("Could not read JSON");
        assertThat(listener.effects).containsOnlyKeys(key("c-good"));
    }

    /**
     * An Error is a crash (ARCHITECTURE.md): the claim stays until its lease ends, the message is neither acked nor
     * dead-lettered (its copies meanwhile wait, uncounted), and it is applied once afterwards.
     */
    @Test
    void aHandlerThrowingAnError_isNeitherAckedNorDeadLettered_andAppliedOnceWhenItStops(TestInfo test)
            throws Exception {
        freshTopic(test);
        ScriptedListener listener = new ScriptedListener();
        start(listener, Map.of());
        send(key("e-crash"), "error:2");

        await().atMost(Duration.ofSeconds(60)).until(() -> listener.effects.containsKey(key("e-crash")));
        assertThat(listener.calls).containsEntry(key("e-crash"), 3);
        assertThat(listener.effects).containsEntry(key("e-crash"), 1);
        assertThat(deadLetters()).isEmpty();
    }

    /** A message without KEYS: dead-lettered at once with the reason, the method never called. */
    @Test
    void aMessageWithoutKeys_isDeadLetteredAtOnce_withTheReason(TestInfo test) throws Exception {
        freshTopic(test);
        ScriptedListener listener = new ScriptedListener();
        start(listener, Map.of());
        Message keyless = new Message(topic, "apply".getBytes(StandardCharsets.UTF_8));
        assertThat(producer.send(keyless).getSendStatus()).isEqualTo(SendStatus.SEND_OK);

        await().atMost(Duration.ofSeconds(30)).until(() -> !deadLetters().isEmpty());
        assertThat(deadLetters())
                .singleElement()
                .satisfies(dead -> assertThat(dead.getProperty(IdempotentRocketMQ.DLQ_REASON))
                        .containsIgnoringCase("key"));
        assertThat(listener.calls).isEmpty();
    }

    /** Starts a container of {@code listener} (made a bean: proxied as the application's listeners are). */
    private DefaultRocketMQListenerContainer start(Object listener, Map<String, Object> attributes) {
        Map<String, Object> annotation = new HashMap<>(attributes);
        annotation.put("topic", topic);
        annotation.put("consumerGroup", group());
        String name = topic + "-listener-" + COUNTER.incrementAndGet();
        Object bean = context.getBeanFactory().initializeBean(listener, name);
        context.getBean(RocketMQMessageListenerContainerRegistrar.class)
                .registerContainer(
                        name,
                        bean,
                        AnnotationUtils.synthesizeAnnotation(annotation, RocketMQMessageListener.class, null));
        DefaultRocketMQListenerContainer container =
                context.getBeansOfType(DefaultRocketMQListenerContainer.class).values().stream()
                        .filter(c -> c.getRocketMQListener() == bean)
                        .findFirst()
                        .orElseThrow();
        container.start();
        containers.add(container);
        return container;
    }

    private static final AtomicInteger COUNTER = new AtomicInteger();

    /** A key of this test's own: the lease store may be a Redis that outlives the run. */
    private String key(String name) {
        return topic + "-" + name;
    }

    private void send(String keys, String body) throws Exception {
        Message message = new Message(topic, "", keys, body.getBytes(StandardCharsets.UTF_8));
        assertThat(producer.send(message).getSendStatus()).isEqualTo(SendStatus.SEND_OK);
    }

    private List<MessageExt> deadLetters() throws Exception {
        return BROKER.messages(MixAll.getDLQTopic(group()));
    }

    private String reasonOf(String keys) throws Exception {
        return deadLetters().stream()
                .filter(d -> keys.equals(d.getKeys()))
                .map(d -> d.getProperty(IdempotentRocketMQ.DLQ_REASON))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no dead letter for " + keys));
    }

    private String group() {
        return topic + "-g";
    }

    /** Consumes from the first offset, with a client instance of its own. */
    abstract static class FromFirstOffset implements RocketMQPushConsumerLifecycleListener {
        @Override
        public void prepareStart(DefaultMQPushConsumer consumer) {
            consumer.setInstanceName("scenario-" + COUNTER.incrementAndGet());
            consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            consumer.setPersistConsumerOffsetInterval(200);
            consumer.setHeartbeatBrokerInterval(1000);
            consumer.setPollNameServerInterval(1000);
        }
    }

    /** Keyed by the message's KEYS, as docs/spring-boot.md shows. */
    public static class KeysListener extends FromFirstOffset implements RocketMQListener<MessageExt> {
        final Map<String, Integer> effects = new ConcurrentHashMap<>();

        @Override
        @Idempotent(namespace = "scenario-keys", key = "#message.keys")
        public void onMessage(MessageExt message) {
            effects.merge(message.getKeys(), 1, Integer::sum);
        }
    }

    /** Holds until released; counts the interrupts it sees. */
    public static class SlowListener extends FromFirstOffset implements RocketMQListener<MessageExt> {
        final CountDownLatch started = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        final AtomicInteger interrupted = new AtomicInteger();
        final Map<String, Integer> effects = new ConcurrentHashMap<>();

        @Override
        @Idempotent(namespace = "scenario-slow", key = "#message.keys")
        public void onMessage(MessageExt message) {
            started.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                interrupted.incrementAndGet();
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            }
            effects.merge(message.getKeys(), 1, Integer::sum);
        }
    }

    /**
     * The body says what to do: {@code reject}, {@code fail} (always), {@code error:N} (an {@link Error} on the first N
     * calls, then apply) or {@code apply}.
     */
    public static class ScriptedListener extends FromFirstOffset implements RocketMQListener<MessageExt> {
        final Map<String, Integer> calls = new ConcurrentHashMap<>();
        final Map<String, Integer> effects = new ConcurrentHashMap<>();

        @Override
        @Idempotent(namespace = "scenario-scripted", key = "#message.keys")
        public void onMessage(MessageExt message) {
            calls.merge(message.getKeys(), 1, Integer::sum);
            String body = new String(message.getBody(), StandardCharsets.UTF_8);
            if (body.equals("reject")) {
                throw new DeadLetterException("scripted rejection", null);
            }
            if (body.startsWith("error:")
                    && calls.get(message.getKeys()) <= Integer.parseInt(body.substring("error:".length()))) {
                throw new AssertionError("scripted error");
            }
            if (body.equals("fail")) {
                throw new IllegalStateException("scripted failure");
            }
            effects.merge(message.getKeys(), 1, Integer::sum);
        }
    }

    public record Payment(String id, int amount) {}

    /** A listener of a converted type, keyed by a field of it. */
    public static class PaymentListener extends FromFirstOffset implements RocketMQListener<Payment> {
        final Map<String, Integer> effects = new ConcurrentHashMap<>();

        @Override
        @Idempotent(namespace = "scenario-payments", key = "#message.id")
        public void onMessage(Payment message) {
            effects.merge(message.id(), 1, Integer::sum);
        }
    }

    /** Spring Boot with the starter and rocketmq-spring; the tests start their listeners. */
    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class ScenarioApp {}
}
