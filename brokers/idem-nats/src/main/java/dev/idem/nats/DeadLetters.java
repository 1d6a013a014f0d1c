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
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/**
 * Publishes a message the consumer gives up on to the dead-letter subject and waits for the stream's {@code
 * PubAck}: only then may the original be terminated. The copy keeps the data and the application's headers (not the
 * {@code Nats-} ones the server acts on) and adds the reason. A copy that would exceed the server's {@code max_payload}
 * drops the application's headers and says so in the reason; one that would exceed it even so (or that the
 * dead-letter stream refuses as too large) is stored without the data: it names where the original is (stream,
 * sequence, subject, key, size), and {@link Stored#WITHOUT_DATA} tells the consumer that the data is only there.
 */
final class DeadLetters {
    private static final int MAX_HEADER_VALUE = 1024;
    /** The JetStream API error of a message larger than the stream's {@code max_msg_size}. */
    private static final int MESSAGE_EXCEEDS_STREAM_MAXIMUM = 10054;
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

    /** What the dead-letter stream stored. */
    enum Stored {
        /** The original's data, with or without its application headers. */
        WITH_DATA,
        /** Only the headers naming the original: its data is only in its own stream. */
        WITHOUT_DATA
    }

    /**
     * Stores the dead letter. Its {@value NatsProducers#MSG_ID} names the original delivery (stream, consumer, stream
     * sequence, store time), so that a second dead-lettering of the same message (its term was lost) is deduplicated by the
     * dead-letter stream within its duplicate window; the original id moves to {@value IdempotentNatsConsumer#DLQ_MSG_ID}.
     *
     * @param key the idempotency key, when it could be read
     * @throws IOException when even the copy without the data does not fit, or the dead-letter stream is unavailable
     */
    Stored publish(Message original, @Nullable String key, Outcome outcome, int attempt)
            throws IOException, JetStreamApiException {
        byte[] data = original.getData() == null ? new byte[0] : original.getData();
        Headers headers = applicationHeaders(original);
        addDeadLetterHeaders(headers, original, outcome, attempt, headerValue(outcome.reason()));
        long maxPayload = connection.getMaxPayload();
        if (!fits(headers, data)) {
            headers = new Headers();
            addDeadLetterHeaders(
                    headers,
                    original,
                    outcome,
                    attempt,
                    headerValue(outcome.reason() + " (the message's own headers were dropped from this dead letter:"
                            + " with them it exceeds the server's max_payload of " + maxPayload + " bytes)"));
            if (!fits(headers, data)) {
                return publishWithoutData(
                        original, key, outcome, attempt, "the server's max_payload of " + maxPayload + " bytes");
            }
        }
        try {
            store(headers, data);
            return Stored.WITH_DATA;
        } catch (JetStreamApiException e) {
            if (e.getApiErrorCode() != MESSAGE_EXCEEDS_STREAM_MAXIMUM) {
                throw e;
            }
            return publishWithoutData(
                    original, key, outcome, attempt, "the dead-letter stream's maximum (" + e.getMessage() + ")");
        }
    }

    /**
     * Stores a dead letter without the data that names the original: {@value IdempotentNatsConsumer#DLQ_STREAM},
     * {@value IdempotentNatsConsumer#DLQ_SEQUENCE}, {@value IdempotentNatsConsumer#DLQ_SUBJECT}, {@value
     * IdempotentNatsConsumer#DLQ_KEY} and {@value IdempotentNatsConsumer#DLQ_DATA_OMITTED} (its size in bytes).
     */
    private Stored publishWithoutData(
            Message original, @Nullable String key, Outcome outcome, int attempt, String limit)
            throws IOException, JetStreamApiException {
        int size = original.getData() == null ? 0 : original.getData().length;
        NatsJetStreamMetaData meta = original.metaData();
        Headers headers = new Headers();
        addDeadLetterHeaders(
                headers,
                original,
                outcome,
                attempt,
                headerValue(outcome.reason() + " (the data of " + size + " bytes was left out of this dead letter:"
                        + " with it, it exceeds " + limit + "; the original is message " + meta.streamSequence()
                        + " of stream " + meta.getStream() + ")"));
        if (key != null) {
            headers.put(
                    IdempotentNatsConsumer.DLQ_KEY,
                    headerValue(HeaderKeys.encode(key.getBytes(StandardCharsets.UTF_8))));
        }
        headers.put(IdempotentNatsConsumer.DLQ_DATA_OMITTED, Integer.toString(size));
        if (!fits(headers, new byte[0])) {
            throw new IOException("even a dead letter without its data exceeds the server's max_payload of "
                    + connection.getMaxPayload() + " bytes; raise max_payload");
        }
        store(headers, new byte[0]);
        return Stored.WITHOUT_DATA;
    }

    private boolean fits(Headers headers, byte[] data) {
        long maxPayload = connection.getMaxPayload();
        return maxPayload <= 0 || headers.serializedLength() + (long) data.length <= maxPayload;
    }

    private void store(Headers headers, byte[] data) throws IOException, JetStreamApiException {
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
        headers.put(NatsProducers.MSG_ID, HeaderKeys.DEAD_LETTER_ID_PREFIX + RetryCounts.identity(meta));
        String originalId = HeaderKeys.messageId(original);
        if (originalId != null) {
            headers.put(IdempotentNatsConsumer.DLQ_MSG_ID, originalId);
        } else {
            headers.remove(IdempotentNatsConsumer.DLQ_MSG_ID); // a producer's own, copied with the application headers
        }
        headers.put(IdempotentNatsConsumer.DLQ_REASON, reason);
        headers.put(IdempotentNatsConsumer.DLQ_OUTCOME, outcome.type().name());
        headers.put(IdempotentNatsConsumer.DLQ_ATTEMPTS, Integer.toString(attempt));
        headers.put(IdempotentNatsConsumer.DLQ_STREAM, meta.getStream());
        headers.put(IdempotentNatsConsumer.DLQ_CONSUMER, meta.getConsumer());
        headers.put(IdempotentNatsConsumer.DLQ_SUBJECT, original.getSubject());
        headers.put(IdempotentNatsConsumer.DLQ_SEQUENCE, Long.toString(meta.streamSequence()));
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
