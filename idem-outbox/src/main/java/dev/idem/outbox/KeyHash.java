package dev.idem.outbox;

/**
 * The key's shard hash, stored at insert: {@link String#hashCode()} (specified by the JLS, the same in every JVM),
 * made non-negative. The relay's shard of a key is {@code hash % shards}.
 */
final class KeyHash {
    private KeyHash() {}

    static int of(String key) {
        return key.hashCode() & Integer.MAX_VALUE;
    }
}
