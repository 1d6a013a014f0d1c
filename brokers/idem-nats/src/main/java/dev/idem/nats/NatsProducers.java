package dev.idem.nats;

import dev.idem.RetryPolicy;
import io.nats.client.JetStream;
import io.nats.client.JetStreamApiException;
import io.nats.client.Message;
import io.nats.client.api.PublishAck;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * Publisher helpers: fix the message's id in the {@value #MSG_ID} header <b>before the first publish</b>, and publish
 * the same message again when its {@link PublishAck} was lost.
 *
 * <p>What the server's duplicate window does: a stream remembers each {@value #MSG_ID} it stored for its {@code
 * duplicate_window} (default 2 minutes, {@code StreamConfiguration.builder().duplicateWindow(...)}); a publish of a
 * remembered id within that time is not stored again and its ack says {@link PublishAck#isDuplicate()}. What it does
 * not cover: a resend after the window (stored again), the same message published without the header or under
 * another id, the same id published to another stream, and everything on the consumer side (AckWait expiry, a consumer
 * that crashes before its ack, a nak): those reach the handler twice, and the consumer's guard recognises them by the
 * same id ({@link KeyExtractor#msgId()}).
 */
public final class NatsProducers {
    /** The header JetStream dedups publishes by; the consumer's default idempotency key. */
    public static final String MSG_ID = "Nats-Msg-Id";

    private NatsProducers() {}

    /** A message for {@code subject} carrying {@code messageId} (e.g. {@code 10086:PAY}) in {@value #MSG_ID}. */
    public static Message message(String subject, String messageId, byte[] data) {
        Objects.requireNonNull(messageId, "messageId");
        if (messageId.isBlank()) {
            throw new IllegalArgumentException("a message id must not be blank");
        }
        return message(subject, messageId.getBytes(StandardCharsets.UTF_8), data);
    }

    /**
     * A message for {@code subject} whose {@value #MSG_ID} carries the key {@code messageId}, any bytes: a key that is
     * not printable ASCII travels as {@code hex:} and its bytes in hex (jnats carries only printable ASCII in
     * headers), and the consumer's {@link KeyExtractor#msgId()} reads back exactly these bytes.
     */
    public static Message message(String subject, byte[] messageId, byte[] data) {
        Objects.requireNonNull(subject, "subject");
        Objects.requireNonNull(messageId, "messageId");
        Objects.requireNonNull(data, "data");
        if (messageId.length == 0) {
            throw new IllegalArgumentException("a message id must not be empty");
        }
        return NatsMessage.builder()
                .subject(subject)
                .headers(new Headers().put(MSG_ID, HeaderKeys.encode(messageId)))
                .data(data)
                .build();
    }

    /**
     * Publishes {@code message}, which must carry a {@value #MSG_ID}, and publishes the same message again after an
     * {@link IOException} (a timeout: the ack may be lost although the server stored it), up to {@code
     * retry.maxAttempts()} attempts, waiting {@code retry.delayAfter(n)} between them. Within the stream's duplicate
     * window a resend of a stored message is answered {@link PublishAck#isDuplicate()} and not stored again.
     *
     * @throws IOException the last attempt's failure, when every attempt failed
     * @throws JetStreamApiException the server refused the message (not retried)
     * @throws InterruptedException interrupted while waiting between attempts
     */
    public static PublishAck publish(JetStream jetStream, Message message, RetryPolicy retry)
            throws IOException, JetStreamApiException, InterruptedException {
        Objects.requireNonNull(jetStream, "jetStream");
        Objects.requireNonNull(retry, "retry");
        if (!message.hasHeaders() || message.getHeaders().getFirst(MSG_ID) == null) {
            throw new IllegalArgumentException("the message has no " + MSG_ID + " header: build it with"
                    + " NatsProducers.message(subject, id, data) so that every resend carries the same id");
        }
        for (int attempt = 1; ; attempt++) {
            try {
                return jetStream.publish(message);
            } catch (IOException e) {
                if (retry.exhausted(attempt)) {
                    throw e;
                }
                Thread.sleep(retry.delayAfter(attempt).toMillis());
            }
        }
    }
}
