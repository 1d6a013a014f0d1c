package dev.idem;

import dev.idem.internal.Sha256;
import java.nio.charset.StandardCharsets;

/**
 * A namespaced idempotency key: the identity of one logical message for one handler.
 *
 * <p>The <b>namespace</b> names the handler (a consumer group, a handler name) so two handlers of the same
 * message never collide: 1 to {@value #MAX_NAMESPACE_LENGTH} characters of {@code [A-Za-z0-9._-]}, starting
 * with a letter or digit.
 *
 * <p>The <b>key</b> is fixed by the producer before the first send (a business key such as {@code 10086:PAY},
 * or a message id carried in a header). It must not be blank, must not hold control characters and must not be
 * longer than {@value #MAX_KEY_LENGTH} characters. Keys are compared as they are, char for char: no Unicode
 * normalisation, no case folding, no trimming. {@code "café"} written precomposed ({@code U+00E9}) and decomposed
 * ({@code e U+0301}) are two keys, as are {@code "Order-1"} and {@code "order-1"}: a producer that can send one key
 * in two forms must normalise it itself.
 *
 * <p><b>Hashing rule.</b> A key is stored as it is when its UTF-8 form is at most {@value #MAX_STORED_KEY_BYTES}
 * bytes and it does not start with {@code sha256:}; otherwise it is stored as {@code sha256:} followed by the 64
 * lowercase hex digits of the SHA-256 of its UTF-8 bytes. No raw key can therefore equal a hashed one, and a
 * stored id ({@link #storageId()}: namespace, {@code ':'}, stored key) is at most 193 characters.
 *
 * <p>Instances are immutable and thread-safe.
 */
public record IdempotencyKey(String namespace, String key) {
    public static final int MAX_NAMESPACE_LENGTH = 64;
    public static final int MAX_KEY_LENGTH = 4096;
    public static final int MAX_STORED_KEY_BYTES = 128;
    /** Longest possible {@link #storageId()}, in characters (all of them ASCII when hashed). */
    public static final int MAX_STORAGE_ID_LENGTH = MAX_NAMESPACE_LENGTH + 1 + MAX_STORED_KEY_BYTES;

    private static final String HASH_PREFIX = "sha256:";

    public IdempotencyKey {
        validateNamespace(namespace);
        validateKey(namespace, key);
    }

    public static IdempotencyKey of(String namespace, String key) {
        return new IdempotencyKey(namespace, key);
    }

    /** Checks a namespace, throwing {@link ConfigurationException} with the fix when it is not valid. */
    public static String validateNamespace(String namespace) {
        if (!isValidNamespace(namespace)) {
            throw new ConfigurationException("namespace '" + namespace + "' is not valid: use 1 to "
                    + MAX_NAMESPACE_LENGTH
                    + " characters of [A-Za-z0-9._-] starting with a letter or digit, e.g. 'payments-consumer'");
        }
        return namespace;
    }

    /** {@code [A-Za-z0-9][A-Za-z0-9._-]{0,63}}, checked on every key: without a regular expression. */
    private static boolean isValidNamespace(String namespace) {
        if (namespace == null || namespace.isEmpty() || namespace.length() > MAX_NAMESPACE_LENGTH) {
            return false;
        }
        for (int i = 0; i < namespace.length(); i++) {
            char c = namespace.charAt(i);
            boolean alphanumeric = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9';
            if (!alphanumeric && (i == 0 || c != '.' && c != '_' && c != '-')) {
                return false;
            }
        }
        return true;
    }

    private static void validateKey(String namespace, String key) {
        if (key == null || key.isBlank()) {
            throw new InvalidKeyException("idempotency key for namespace '" + namespace
                    + "' is missing or blank: the producer must set a key before the first send");
        }
        if (key.length() > MAX_KEY_LENGTH) {
            throw new InvalidKeyException("idempotency key for namespace '" + namespace + "' is " + key.length()
                    + " characters long; the limit is " + MAX_KEY_LENGTH
                    + ": use a business id or a generated message id, not the payload");
        }
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            if (Character.isISOControl(c)) {
                throw new InvalidKeyException("idempotency key for namespace '" + namespace
                        + "' holds a control character at index " + i + ": strip or encode it on the producer side");
            }
            if (Character.isHighSurrogate(c) && i + 1 < key.length() && Character.isLowSurrogate(key.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new InvalidKeyException("idempotency key for namespace '" + namespace
                        + "' holds an unpaired UTF-16 surrogate at index " + i
                        + ": it has no UTF-8 form and would collide with other keys; fix the producer's encoding");
            }
        }
    }

    /** The key as stored: the key itself, or {@code sha256:<hex>} under the hashing rule above. */
    public String storedKey() {
        byte[] utf8 = key.getBytes(StandardCharsets.UTF_8);
        if (utf8.length <= MAX_STORED_KEY_BYTES && !key.startsWith(HASH_PREFIX)) {
            return key;
        }
        return HASH_PREFIX + Sha256.hex(utf8);
    }

    /** {@code namespace + ':' + storedKey()}: the unique id under which stores keep this key. */
    public String storageId() {
        return namespace + ':' + storedKey();
    }

    /**
     * What logs and metrics show instead of the key: the namespace and the first 12 hex digits of the SHA-256 of
     * the key, e.g. {@code payments/3f2a9c01be77}.
     */
    public String logId() {
        return namespace
                + '/'
                + Sha256.hex(key.getBytes(StandardCharsets.UTF_8)).substring(0, 12);
    }

    @Override
    public String toString() {
        return logId();
    }
}
