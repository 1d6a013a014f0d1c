package dev.idem.nats;

import dev.idem.Outcome;
import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamApiException;
import io.nats.client.Message;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsJetStreamMetaData;
import io.nats.client.impl.NatsMessage;
import java.io.IOException;
import java.time.Instant;

/**
 * Publishes a message the consumer gives up on to the dead-letter subject and waits for the stream's {@code
 * PubAck}: only then may the original be terminated. The copy keeps the data and the application's headers (not the
 * {@code Nats-} ones the server acts on) and adds the reason. A copy that would exceed the server's {@code max_payload}
 * drops the application's headers and says so in the reason; one that would not fit even so is not stored (the
 * consumer retries it later, and never terminates it).
 */
final class DeadLetters {
    private static final int MAX_HEADER_VALUE = 1024;
    /**
     * Headers the server acts on ({@code Nats-Expected-Stream}, {@code Nats-Expected-Last-Sequence}, {@code
     * Nats-Rollup}, ...): copied to the dead-letter stream they would make it refuse the copy, or purge it.
     */
    private static final String SERVER_HEADER_PREFIX = "Nats-";

    private final Connection connection;
    private final JetStream jetStream;
    private final String subject;

    DeadLetters(Connection connection, JetStream jetStream, String subject) {
        this.connection = connection;
        this.jetStream = jetStream;
        this.subject = subject;
    }

    String subject() {
        return subject;
    }

    /**
     * Stores the dead letter. Its {@value NatsProducers#MSG_ID} names the original delivery (stream, consumer, stream
     * sequence, store time), so that a second dead-lettering of the same message (its term was lost) is deduplicated by the
     * dead-letter stream within its duplicate window; the original id moves to {@value IdempotentNatsConsumer#DLQ_MSG_ID}.
     */
    void publish(Message original, Outcome outcome, int attempt) throws IOException, JetStreamApiException {
        byte[] data = original.getData() == null ? new byte[0] : original.getData();
        Headers headers = applicationHeaders(original);
        addDeadLetterHeaders(headers, original, outcome, attempt, headerValue(outcome.reason()));
        long maxPayload = connection.getMaxPayload();
        if (maxPayload > 0 && headers.serializedLength() + (long) data.length > maxPayload) {
            headers = new Headers();
            addDeadLetterHeaders(
                    headers,
                    original,
                    outcome,
                    attempt,
                    headerValue(outcome.reason() + " (the message's own headers were dropped from this dead letter:"
                            + " with them it exceeds the server's max_payload of " + maxPayload + " bytes)"));
            if (headers.serializedLength() + (long) data.length > maxPayload) {
                throw new IOException("the dead letter of a message of " + data.length + " bytes does not fit in the"
                        + " server's max_payload of " + maxPayload + " bytes with its dead-letter headers; raise"
                        + " max_payload or send smaller messages");
            }
        }
        jetStream.publish(NatsMessage.builder()
                .subject(subject)
                .headers(headers)
                .data(data)
                .build());
    }

    /** The original's headers but its {@value NatsProducers#MSG_ID} and the others the server acts on. */
    private static Headers applicationHeaders(Message original) {
        Headers headers = new Headers();
        if (original.hasHeaders()) {
            for (String name : original.getHeaders().keySet()) {
                if (!name.regionMatches(true, 0, SERVER_HEADER_PREFIX, 0, SERVER_HEADER_PREFIX.length())) {
                    headers.put(name, original.getHeaders().get(name));
                }
            }
        }
        return headers;
    }

    private static void addDeadLetterHeaders(
            Headers headers, Message original, Outcome outcome, int attempt, String reason) {
        NatsJetStreamMetaData meta = original.metaData();
        headers.put(NatsProducers.MSG_ID, deadLetterId(meta));
        String originalId = original.hasHeaders() ? original.getHeaders().getFirst(NatsProducers.MSG_ID) : null;
        if (originalId != null) {
            headers.put(IdempotentNatsConsumer.DLQ_MSG_ID, originalId);
        }
        headers.put(IdempotentNatsConsumer.DLQ_REASON, reason);
        headers.put(IdempotentNatsConsumer.DLQ_OUTCOME, outcome.type().name());
        headers.put(IdempotentNatsConsumer.DLQ_ATTEMPTS, Integer.toString(attempt));
        headers.put(IdempotentNatsConsumer.DLQ_STREAM, meta.getStream());
        headers.put(IdempotentNatsConsumer.DLQ_CONSUMER, meta.getConsumer());
        headers.put(IdempotentNatsConsumer.DLQ_SUBJECT, original.getSubject());
        headers.put(IdempotentNatsConsumer.DLQ_SEQUENCE, Long.toString(meta.streamSequence()));
    }

    /**
     * The delivery's stream, consumer, stream sequence and the time the stream stored it: a stream deleted and created
     * again within the dead-letter stream's duplicate window reuses the sequences, not the store times.
     */
    private static String deadLetterId(NatsJetStreamMetaData meta) {
        Instant stored = meta.timestamp().toInstant();
        return "idem-dlq:" + meta.getStream() + ":" + meta.getConsumer() + ":" + meta.streamSequence() + ":"
                + stored.getEpochSecond() + "." + String.format("%09d", stored.getNano());
    }

    /** Header values are printable ASCII on one line; anything else becomes {@code ?}. */
    static String headerValue(String text) {
        StringBuilder out = new StringBuilder(Math.min(text.length(), MAX_HEADER_VALUE));
        for (int i = 0; i < text.length() && out.length() < MAX_HEADER_VALUE; i++) {
            char c = text.charAt(i);
            out.append(c >= 0x20 && c <= 0x7e ? c : '?');
        }
        return out.toString();
    }
}
