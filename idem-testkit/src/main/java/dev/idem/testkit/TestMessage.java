package dev.idem.testkit;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * One message an {@link AdapterContract} scenario publishes. An adapter's test publishes it the way its producers do:
 * {@code keyBytes} where its key extractor reads the idempotency key (a header, a property), {@code payload} as the
 * body, {@code headers} as extra headers or properties, and {@code route} to pick where a copy goes when the broker
 * routes by something else than the idempotency key (e.g. a Kafka record key, so that two copies of one message land
 * on two partitions and two consumers fetch them at the same moment).
 *
 * @param keyBytes the idempotency key's bytes, or null for a message published without its key
 * @param payload the body; the contract's handler reads its script from it (see {@link ContractLedger})
 * @param headers extra headers, e.g. {@link AdapterContract#hostileHeaders()}
 * @param route a routing hint, or null for the broker's default
 */
public record TestMessage(
        byte @Nullable [] keyBytes,
        byte[] payload,
        Map<String, byte[]> headers,
        @Nullable String route) {
    public TestMessage {
        keyBytes = keyBytes == null ? null : keyBytes.clone();
        payload = payload.clone();
        headers = Map.copyOf(headers);
    }

    /** A message keyed {@code key}, whose payload is the script {@code script}. */
    public static TestMessage of(String key, String script) {
        return new TestMessage(bytes(key), bytes(script), Map.of(), null);
    }

    /** The idempotency key as text (UTF-8), or null. */
    public @Nullable String key() {
        return keyBytes == null ? null : new String(keyBytes, StandardCharsets.UTF_8);
    }

    /** The payload as text (UTF-8). */
    public String text() {
        return new String(payload, StandardCharsets.UTF_8);
    }

    /** This message with {@code extra} headers. */
    public TestMessage withHeaders(Map<String, byte[]> extra) {
        return new TestMessage(keyBytes, payload, extra, route);
    }

    /** This message routed by {@code hint}. */
    public TestMessage routedBy(String hint) {
        return new TestMessage(keyBytes, payload, headers, hint);
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public String toString() {
        return "TestMessage[key=" + key() + ", payload=" + text() + ", headers=" + headers.keySet() + ", route=" + route
                + "]";
    }
}
