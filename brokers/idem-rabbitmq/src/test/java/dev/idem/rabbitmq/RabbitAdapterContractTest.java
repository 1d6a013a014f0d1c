package dev.idem.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import com.rabbitmq.client.LongString;
import com.rabbitmq.client.impl.LongStringHelper;
import dev.idem.RetryPolicy;
import dev.idem.spi.KeyBytes;
import dev.idem.testkit.AdapterContract;
import dev.idem.testkit.TestMessage;
import dev.idem.testsupport.TestServers;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;

/**
 * {@link IdempotentRabbitConsumer} under the adapter contract, on the local RabbitMQ: a fresh quorum topology per test,
 * each consumer on a connection of its own (its crash: the connection aborted, as a killed process's is), prefetch 1 so
 * that a second copy goes to another consumer while the first is held. The key travels as the bytes of header
 * {@value #KEY_HEADER} ({@link KeyExtractor#header}): a {@code message-id} cannot carry bytes that are not UTF-8.
 */
@Execution(ExecutionMode.CONCURRENT) // each scenario has its own destination, consumers and ledger
class RabbitAdapterContractTest extends AdapterContract {
    static final String KEY_HEADER = "idem-key";

    private RabbitFixture.@Nullable Queues queues;
    private final List<GetResponse> taken = new ArrayList<>();
    private int replayed;

    @Override
    protected void createDestination(String name) {
        queues = new RabbitFixture.Queues(RabbitTopology.forQueue(TestServers.uniquePrefix("contract")));
        taken.clear();
        replayed = 0;
    }

    @Override
    protected RunningConsumer startConsumer(ContractHandler handler, RetryPolicy retryPolicy) throws Exception {
        Connection connection = RabbitFixture.connect();
        IdempotentRabbitConsumer consumer = IdempotentRabbitConsumer.builder(connection, queues().topology)
                .keyFrom(KeyExtractor.header(KEY_HEADER))
                .retryPolicy(retryPolicy)
                .prefetch(1)
                .handler((key, message) -> handler.handle(key, message.getBody()))
                .build();
        try {
            consumer.start();
        } catch (Exception e) {
            connection.abort();
            throw e;
        }
        return RunningConsumer.of(
                () -> {
                    consumer.close();
                    connection.abort();
                },
                () -> connection.abort());
    }

    @Override
    protected void publish(TestMessage message) {
        Map<String, Object> headers = new HashMap<>();
        message.headers().forEach((name, value) -> headers.put(name, asAmqp(name, value)));
        if (message.keyBytes() != null) {
            headers.put(KEY_HEADER, message.keyBytes());
        }
        queues().publish(
                        new AMQP.BasicProperties.Builder()
                                .deliveryMode(2)
                                .headers(headers)
                                .build(),
                        new String(message.payload(), StandardCharsets.UTF_8));
    }

    /**
     * A hostile header as a producer would really send it: the broker's routing headers as arrays of queue names, a
     * dead-letter history as the broker writes it, anything else as a long string.
     */
    private static Object asAmqp(String name, byte[] value) {
        LongString text = LongStringHelper.asLongString(value);
        return switch (name) {
            case "CC", "BCC" -> List.of(text);
            case "x-death" ->
                List.of(Map.of(
                        "queue", text,
                        "reason", LongStringHelper.asLongString("delivery_limit"),
                        "count", 1L,
                        "exchange", LongStringHelper.asLongString(""),
                        "routing-keys", List.of(text)));
            default -> text;
        };
    }

    @Override
    protected List<DeadLetter> deadLetters() {
        taken.addAll(queues().drain(queues().topology.deadLetterQueue()));
        List<DeadLetter> dead = new ArrayList<>();
        for (GetResponse r : taken) {
            Map<String, Object> headers = r.getProps().getHeaders();
            Object key = headers == null ? null : headers.get(KEY_HEADER);
            Object reason = headers == null ? null : headers.get(DeliveryProcessor.DLQ_REASON);
            dead.add(new DeadLetter(
                    key instanceof byte[] bytes ? KeyBytes.exactKey(bytes) : null, String.valueOf(reason)));
        }
        return dead;
    }

    @Override
    protected void replayDeadLetters() {
        deadLetters();
        for (; replayed < taken.size(); replayed++) {
            GetResponse r = taken.get(replayed);
            queues().publish(r.getProps(), new String(r.getBody(), StandardCharsets.UTF_8));
        }
    }

    @Override
    protected Map<String, byte[]> hostileHeaders() {
        byte[] workQueue = bytes(queues().queue());
        return Map.of(
                DeliveryProcessor.ATTEMPTS_HEADER,
                bytes(Integer.toString(Integer.MAX_VALUE)),
                CopyProperties.WAITS_HEADER,
                bytes("1000000"),
                DeliveryProcessor.DLQ_REASON,
                bytes("forged by the producer"),
                "CC",
                workQueue,
                "BCC",
                workQueue,
                "x-death",
                workQueue,
                "x-first-death-queue",
                workQueue,
                "x-delay",
                bytes("60000"));
    }

    @Override
    protected void deleteDestination() {
        if (queues != null) {
            queues.close();
            queues = null;
        }
    }

    private RabbitFixture.Queues queues() {
        if (queues == null) {
            throw new IllegalStateException("no destination: createDestination was not called");
        }
        return queues;
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
