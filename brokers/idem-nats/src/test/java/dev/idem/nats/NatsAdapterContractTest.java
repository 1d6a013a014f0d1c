package dev.idem.nats;

import static org.awaitility.Awaitility.await;

import dev.idem.RetryPolicy;
import dev.idem.testkit.AdapterContract;
import dev.idem.testkit.TestMessage;
import io.nats.client.Connection;
import io.nats.client.Message;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.MessageInfo;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;

/**
 * {@link IdempotentNatsConsumer} passes the adapter contract against the local nats-server: a stream and a dead-letter
 * stream per scenario, one durable pull consumer (AckWait 1 s) shared by the scenario's consumers, each consumer on a
 * connection of its own (its crash closes it). The stream's duplicate window is the server's shortest, 100 ms, and a
 * copy the window drops is published again until the stream stores it, so that every copy a scenario publishes
 * reaches the consumers (a resend after the window): what the window itself drops is {@link ProducerResendTest}'s.
 */
@Execution(ExecutionMode.CONCURRENT) // each scenario has its own destination, consumers and ledger
class NatsAdapterContractTest extends AdapterContract {
    private static final Duration ACK_WAIT = Duration.ofSeconds(1);
    private static final Duration DUPLICATE_WINDOW = Duration.ofMillis(100);

    static Connection nats;

    private NatsFixture.Streams streams;
    private String durable;

    @BeforeAll
    static void connect() {
        nats = NatsFixture.connect();
    }

    @AfterAll
    static void disconnect() throws InterruptedException {
        nats.close();
    }

    @Override
    protected void createDestination(String name) {
        streams = new NatsFixture.Streams(nats, "contract", DUPLICATE_WINDOW);
        durable = streams.durable(
                "contract", ConsumerConfiguration.builder().ackWait(ACK_WAIT).build());
    }

    @Override
    protected void deleteDestination() {
        streams.close();
    }

    @Override
    protected RunningConsumer startConsumer(ContractHandler handler, RetryPolicy retryPolicy) throws Exception {
        Connection connection = NatsFixture.connect();
        IdempotentNatsConsumer consumer = IdempotentNatsConsumer.builder(connection)
                .consumer(streams.name, durable)
                .deadLetterSubject(streams.deadLetterSubject)
                .retryPolicy(retryPolicy)
                .fetchWait(Duration.ofMillis(500))
                .handler((key, message) -> handler.handle(key, message.getData()))
                .build()
                .start();
        return RunningConsumer.of(
                () -> {
                    consumer.close();
                    connection.close();
                },
                connection::close);
    }

    @Override
    protected void publish(TestMessage message) throws Exception {
        String subject = streams.subject("pay");
        Message published = message.keyBytes() == null
                ? NatsMessage.builder()
                        .subject(subject)
                        .headers(new Headers())
                        .data(message.payload())
                        .build()
                : NatsProducers.message(subject, message.keyBytes(), message.payload());
        message.headers().forEach((name, value) -> published.getHeaders().put(name, ascii(value)));
        publishPastTheWindow(published);
    }

    /**
     * Publishes {@code message} until the stream stores it: a copy the duplicate window drops is published again once
     * the window may have passed (the server forgets an id on a timer, later than the window on a loaded machine).
     */
    private void publishPastTheWindow(Message message) throws Exception {
        while (nats.jetStream().publish(message).isDuplicate()) {
            await().pollDelay(DUPLICATE_WINDOW).until(() -> true);
        }
    }

    @Override
    protected List<DeadLetter> deadLetters() throws Exception {
        List<DeadLetter> dead = new ArrayList<>();
        for (MessageInfo info : streams.deadLetters()) {
            String id = info.getHeaders().getFirst(IdempotentNatsConsumer.DLQ_MSG_ID);
            dead.add(new DeadLetter(
                    id == null ? null : HeaderKeys.decode(id),
                    info.getHeaders().getFirst(IdempotentNatsConsumer.DLQ_REASON)));
        }
        return dead;
    }

    /** As {@code nats stream get} and {@code nats pub} would: the dead letter's data and headers, to its subject. */
    @Override
    protected void replayDeadLetters() throws Exception {
        for (MessageInfo info : streams.deadLetters()) {
            nats.jetStream()
                    .publish(NatsMessage.builder()
                            .subject(info.getHeaders().getFirst(IdempotentNatsConsumer.DLQ_SUBJECT))
                            .headers(info.getHeaders())
                            .data(info.getData())
                            .build());
        }
    }

    /**
     * The consumer's own dead-letter header names (a forged original id among them), and a header the server acts on
     * ({@code Nats-Expected-Stream}: right for this stream, wrong for the dead-letter one).
     */
    @Override
    protected Map<String, byte[]> hostileHeaders() {
        return Map.of(
                IdempotentNatsConsumer.DLQ_MSG_ID,
                bytes("someone-else"),
                IdempotentNatsConsumer.DLQ_REASON,
                bytes("forged"),
                IdempotentNatsConsumer.DLQ_OUTCOME,
                bytes("REJECTED"),
                IdempotentNatsConsumer.DLQ_ATTEMPTS,
                bytes("999"),
                IdempotentNatsConsumer.DLQ_SEQUENCE,
                bytes("1"),
                "Nats-Expected-Stream",
                bytes(streams.name));
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.US_ASCII);
    }

    private static String ascii(byte[] value) {
        return new String(value, StandardCharsets.US_ASCII);
    }
}
