package dev.idem.rocketmq;

import dev.idem.RetryPolicy;
import dev.idem.testkit.AdapterContract;
import dev.idem.testkit.Routing;
import dev.idem.testkit.TestMessage;
import dev.idem.testsupport.RocketMQSend;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;

/**
 * The guarded concurrent listener (and the orderly one, {@link RocketMQOrderlyContractTest}) passes the {@link
 * AdapterContract} on the in-process broker: a topic of two queues, its group's {@code %RETRY%} and {@code %DLQ%}
 * topics per scenario, the key in {@link RocketMQProducers#KEY_PROPERTY}, a copy's route as the queue it is sent to,
 * messages without a route to the queues in turn (one producer's messages keep their order within a queue: the cancel
 * overtakes the create on another one). A crash is a shutdown that does not wait for the running handler: the offset
 * persisted is the unfinished message's, as after a kill.
 */
@Execution(ExecutionMode.CONCURRENT) // each scenario has its own destination, consumers and ledger
class RocketMQAdapterContractTest extends AdapterContract {
    private static final int QUEUES = 2;
    private static final AtomicInteger INSTANCES = new AtomicInteger();

    private final Routing routing = new Routing(QUEUES);
    private DefaultMQProducer producer;
    private String topic = "";

    @AfterEach
    void closeProducer() {
        if (producer != null) {
            producer.shutdown();
        }
    }

    @Override
    protected void createDestination(String name) {
        topic = RocketMQFixture.topic(name.substring(0, Math.min(40, name.length())), QUEUES);
        RocketMQFixture.broker().createGroupTopics(group());
        producer = RocketMQFixture.producer(topic + "-p");
    }

    /** Whether the consumers run the orderly listener ({@link RocketMQOrderlyContractTest}) or the concurrent one. */
    boolean orderly() {
        return false;
    }

    private String group() {
        return topic + "-g";
    }

    @Override
    protected RunningConsumer startConsumer(ContractHandler handler, RetryPolicy retryPolicy) {
        DefaultMQPushConsumer consumer =
                RocketMQFixture.consumer(group(), topic, group() + "-" + INSTANCES.incrementAndGet());
        IdempotentRocketMQ idem = RocketMQFixture.idem(consumer)
                .retryPolicy(retryPolicy)
                .keyFrom(KeyExtractor.property(RocketMQProducers.KEY_PROPERTY))
                .handler((key, message) -> handler.handle(key, message.getBody()))
                .build();
        if (orderly()) {
            consumer.registerMessageListener(idem.orderly());
        } else {
            consumer.registerMessageListener(idem.concurrently());
        }
        RocketMQFixture.start(consumer);
        return RunningConsumer.of(consumer::shutdown, () -> {
            consumer.setAwaitTerminationMillisWhenShutdown(1);
            consumer.shutdown();
        });
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
        RocketMQSend.toQueue(producer, message, queue);
    }

    @Override
    protected List<DeadLetter> deadLetters() {
        return RocketMQFixture.deadLetters(group()).stream()
                .map(dead -> new DeadLetter(
                        dead.getUserProperty(RocketMQProducers.KEY_PROPERTY),
                        dead.getUserProperty(IdempotentRocketMQ.DLQ_REASON)))
                .toList();
    }

    /** RocketMQ properties are text: every client's bytes reach the consumer decoded from UTF-8. */
    @Override
    protected boolean carriesKeyBytes() {
        return false;
    }

    /** As an operator's tool does: each dead-letter copy sent back to the topic with every property it carries. */
    @Override
    protected void replayDeadLetters() {
        for (MessageExt dead : RocketMQFixture.deadLetters(group())) {
            Message replay = new Message(topic, dead.getBody());
            MessageAccessor.setProperties(replay, new HashMap<>(dead.getProperties()));
            RocketMQFixture.send(producer, replay);
        }
    }

    /**
     * The listeners' own property names, and RocketMQ's own properties of retries and dead letters, with values that
     * would count the message as tried to the bound, or route its copies elsewhere.
     */
    @Override
    protected Map<String, byte[]> hostileHeaders() {
        Map<String, String> hostile = new HashMap<>();
        hostile.put(RedeliveryAttempts.WAITS, "0:2147483647");
        hostile.put("IDEM_HANDLER_ATTEMPTS", "999");
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
}
