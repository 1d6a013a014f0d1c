package dev.idem.redis;

import dev.idem.ConfigurationException;
import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyKey;
import dev.idem.IdempotencyListener;
import dev.idem.StoreUnavailableException;
import dev.idem.internal.SafeListener;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.IdempotencyStore;
import dev.idem.spi.StoredRecord;
import dev.idem.spi.UpdateResult;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.KeyValue;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.ScriptOutputType;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * A lease store in Redis (standalone or Sentinel-managed), on Lettuce. Every operation is one atomic step on the
 * server: one Lua script (sent by SHA, its source re-sent when the server has lost its script cache) or one command.
 *
 * <pre>{@code
 * try (RedisStore store = RedisStore.builder("redis://127.0.0.1:6379").prefix("idem").build()) {
 *     Guard guard = Guard.builder(store).namespace("payments").build();
 *     Outcome outcome = guard.run(message.key(), () -> charge(message));
 * }
 * }</pre>
 *
 * <p><b>Records.</b> A key is one Redis hash {@code {prefix:namespace}:r:<stored key>} holding its state ({@code
 * PROCESSING}/{@code DONE}), owner token, fencing token, deadline (lease end or retention end), fingerprint and
 * result. The deadline is computed from the store's {@link Clock} and decides; the Redis TTL (deadline plus {@link
 * Builder#expiryMargin}) only collects garbage. Fencing tokens come from the counter {@code {prefix:namespace}:fence},
 * which only grows; when it is missing (first use, or lost) it starts at the clock's milliseconds × 1000, above every
 * token handed out before as long as the namespace averaged fewer than 1000 claims per millisecond.
 *
 * <p><b>Cluster slots.</b> All keys of a namespace share the hash tag {@code {prefix:namespace}}, so one namespace
 * lives in one Redis Cluster slot (one shard) and a batch claim of that namespace is one script. Load spreads across
 * shards by namespace, not by key: a single hot namespace is served by one shard.
 *
 * <p><b>Mark loss.</b> Redis without persistence forgets every mark when it restarts, and a failover can lose recent
 * writes. The store arms each namespace at its first use by writing a sentinel {@code {prefix:namespace}:epoch}, and
 * every claim script checks it atomically: when it is missing or was replaced, the claim fails closed with {@link
 * MarksLostException} (a {@link StoreUnavailableException}, so a {@code Guard} answers {@code IN_PROGRESS}, retry
 * later) and the listener gets {@link IdempotencyEvent.Type#MARKS_LOST}, on every store sharing the prefix, until an operator
 * calls {@link #rearm()} (or the {@link MarkLossPolicy} re-arms after a delay). A store that first meets a namespace
 * after the loss, with no earlier store of that namespace left running, cannot tell an empty Redis from a new one.
 *
 * <p>Thread-safe; its settings are immutable. It connects on first use, and {@link #close()} closes the connection,
 * and the client only when the store created it.
 */
public final class RedisStore implements IdempotencyStore {
    private static final System.Logger LOG = System.getLogger(RedisStore.class.getName());
    private static final Pattern NAMESPACE = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,63}");
    private static final int BATCH_CHUNK = 256;
    private static final byte[] NONE = {'-'};

    private final RedisLink link;
    private final String prefix;
    private final Clock clock;
    private final Duration expiryMargin;
    private final MarkLossPolicy markLossPolicy;
    private final IdempotencyListener listener;
    private final String description;
    private final ConcurrentHashMap<String, Witness> witnesses = new ConcurrentHashMap<>();

    private RedisStore(Builder b, RedisClient client, boolean ownsClient, String description) {
        this.prefix = b.prefix;
        this.clock = b.clock;
        this.expiryMargin = b.expiryMargin;
        this.markLossPolicy = b.markLossPolicy;
        this.listener = new SafeListener(b.listener);
        this.description = description + " prefix '" + b.prefix + "'";
        this.link = new RedisLink(client, ownsClient, b.commandTimeout, this.description);
    }

    /**
     * A builder for a store that creates (and on {@link #close()} shuts down) its own client, e.g. {@code
     * redis://127.0.0.1:6379}, {@code rediss://user:password@host:6380/0} (TLS, ACL user) or {@code
     * redis-sentinel://host:26379/0#mymaster}: every form {@link RedisURI} takes.
     */
    public static Builder builder(String redisUri) {
        return new Builder(RedisLink.parse(redisUri), null);
    }

    /** A builder for a store on a client the caller owns: the store never shuts it down. */
    public static Builder builder(RedisClient client) {
        return new Builder(null, Objects.requireNonNull(client, "client"));
    }

    @Override
    public ClaimResult claim(ClaimRequest request) {
        return claimAll(List.of(request)).get(0);
    }

    /**
     * Claims every key in one round trip: one script per namespace (and per {@value #BATCH_CHUNK} keys), all sent
     * at once. When marks are lost in any namespace of the batch, throws {@link MarksLostException}; claims already
     * made in other namespaces then belong to the caller, who gets them back by claiming again with the same owner.
     */
    @Override
    public List<ClaimResult> claimAll(List<ClaimRequest> requests) {
        ensureDistinct(requests);
        if (requests.isEmpty()) {
            return List.of();
        }
        Map<String, List<Integer>> byNamespace = new LinkedHashMap<>();
        for (int i = 0; i < requests.size(); i++) {
            byNamespace
                    .computeIfAbsent(requests.get(i).key().namespace(), ns -> new ArrayList<>())
                    .add(i);
        }
        ClaimResult[] results = new ClaimResult[requests.size()];
        for (int attempt = 0; ; attempt++) {
            List<Map.Entry<String, List<Integer>>> pending = new ArrayList<>();
            for (Map.Entry<String, List<Integer>> group : byNamespace.entrySet()) {
                List<Integer> sorted = new ArrayList<>(group.getValue());
                sorted.sort(Comparator.comparing(i -> requests.get(i).key().storageId()));
                for (int from = 0; from < sorted.size(); from += BATCH_CHUNK) {
                    pending.add(Map.entry(
                            group.getKey(), sorted.subList(from, Math.min(sorted.size(), from + BATCH_CHUNK))));
                }
            }
            Instant now = clock.instant();
            List<RedisLink.Call<List<Object>>> calls = new ArrayList<>();
            for (Map.Entry<String, List<Integer>> chunk : pending) {
                calls.add(claimCall(chunk.getKey(), chunk.getValue(), requests, now));
            }
            MarksLostException lost = null;
            Set<String> rearmed = new HashSet<>();
            for (int c = 0; c < calls.size(); c++) {
                String namespace = pending.get(c).getKey();
                List<Integer> indexes = pending.get(c).getValue();
                List<Object> reply = calls.get(c).await();
                if (text(reply.get(0)).equals("LOST")) {
                    String marker = text(reply.get(1));
                    if (attempt == 0 && rearmedByPolicy(namespace, marker, now)) {
                        rearmed.add(namespace);
                    } else if (lost == null) {
                        lost = marksLost(namespace, marker);
                    }
                    continue;
                }
                long highest = 0;
                for (int j = 0; j < indexes.size(); j++) {
                    int i = indexes.get(j);
                    results[i] = claimResult(requests.get(i), list(reply.get(2 + j)));
                    if (results[i] instanceof ClaimResult.Acquired acquired) {
                        highest = Math.max(highest, acquired.fencingToken());
                    }
                }
                witnessed(namespace, text(reply.get(1)), highest);
            }
            if (lost != null) {
                throw lost;
            }
            if (rearmed.isEmpty()) {
                return Arrays.asList(results);
            }
            byNamespace.keySet().retainAll(rearmed);
        }
    }

    private RedisLink.Call<List<Object>> claimCall(
            String namespace, List<Integer> indexes, List<ClaimRequest> requests, Instant now) {
        Keys keys = new Keys(prefix, namespace);
        byte[][] k = new byte[2 + indexes.size()][];
        byte[][] a = new byte[6 + 3 * indexes.size()][];
        k[0] = keys.epoch();
        k[1] = keys.fence();
        String expected = witness(namespace).epoch();
        a[0] = utf8(expected);
        a[1] = utf8(expected.isEmpty() ? "0:" + UUID.randomUUID() : "");
        a[2] = millis(now);
        a[3] = utf8(Long.toString(Math.multiplyExact(now.toEpochMilli(), 1000L)));
        a[4] = utf8(Long.toString(expiryMargin.toMillis()));
        a[5] = utf8(Long.toString(witness(namespace).token()));
        for (int j = 0; j < indexes.size(); j++) {
            ClaimRequest r = requests.get(indexes.get(j));
            k[2 + j] = keys.record(r.key());
            a[6 + 3 * j] = utf8(r.owner());
            a[7 + 3 * j] = optional(r.fingerprint() == null ? null : utf8(r.fingerprint()));
            a[8 + 3 * j] = utf8(Long.toString(r.lease().toMillis()));
        }
        return link.call(Script.CLAIM, ScriptOutputType.MULTI, k, a);
    }

    /**
     * What this store last saw of a namespace: its epoch, and the highest fencing token it handed out under that epoch
     * (a counter found below it later means Redis lost writes, e.g. in a failover).
     */
    private record Witness(String epoch, long token) {}

    private Witness witness(String namespace) {
        return witnesses.getOrDefault(namespace, new Witness("", 0));
    }

    private void witnessed(String namespace, String epoch, long token) {
        Witness known = witnesses.get(namespace);
        if (known != null && known.epoch().equals(epoch) && known.token() >= token) {
            return; // nothing new (a duplicate, or a token below one seen): no write to the shared map
        }
        witnesses.merge(
                namespace,
                new Witness(epoch, token),
                (old, seen) -> old.epoch().equals(seen.epoch())
                        ? new Witness(old.epoch(), Math.max(old.token(), seen.token()))
                        : seen);
    }

    private static ClaimResult claimResult(ClaimRequest request, List<Object> r) {
        return switch (text(r.get(0))) {
            case "C" -> new ClaimResult.Claimed(request.owner(), number(r.get(1)), instant(r.get(2)));
            case "T" -> new ClaimResult.TakenOver(request.owner(), number(r.get(1)), instant(r.get(2)), text(r.get(3)));
            case "I" -> new ClaimResult.InProgress(text(r.get(1)), instant(r.get(2)), textOrNull(at(r, 3)));
            case "D" ->
                new ClaimResult.Done(instant(r.get(1)), instant(r.get(2)), textOrNull(at(r, 3)), bytes(at(r, 4)));
            default -> throw new IllegalStateException("unexpected claim reply " + r.get(0));
        };
    }

    private MarksLostException marksLost(String namespace, String marker) {
        MarksLostException e = new MarksLostException(description, namespace, detectedAt(marker), markLossPolicy);
        warn(namespace, e.getMessage());
        return e;
    }

    /** Under {@link MarkLossPolicy#rearmAfter}, re-arms a namespace whose loss is old enough. */
    private boolean rearmedByPolicy(String namespace, String marker, Instant now) {
        Duration delay = markLossPolicy.rearmAfter;
        Instant detectedAt = detectedAt(marker);
        if (delay == null || now.isBefore(detectedAt.plus(delay))) {
            return false;
        }
        rearm(namespace, marker, now);
        warn(
                namespace,
                description + ": namespace '" + namespace + "' re-armed by the mark-loss policy " + markLossPolicy
                        + " after the loss detected at " + detectedAt
                        + "; keys completed before the loss may be processed again");
        return true;
    }

    private static Instant detectedAt(String marker) {
        return Instant.ofEpochMilli(Long.parseLong(marker.substring(marker.lastIndexOf(':') + 1)));
    }

    private void warn(String namespace, String message) {
        LOG.log(System.Logger.Level.WARNING, "MARKS_LOST {0}", message);
        listener.onEvent(IdempotencyEvent.builder(IdempotencyEvent.Type.MARKS_LOST, namespace)
                .source(description)
                .message(message)
                .build());
    }

    /**
     * Re-arms every namespace under this store's prefix after an operator has dealt with a loss of marks: the
     * namespaces this store has used and every namespace whose sentinel a scan of the prefix finds. From then on
     * claims are answered again (keys whose marks were lost count as new). Returns the namespaces re-armed.
     */
    public Set<String> rearm() {
        Set<String> namespaces = new TreeSet<>(witnesses.keySet());
        byte[] pattern = utf8("{" + prefix + ":*}:epoch");
        ScanCursor cursor = ScanCursor.INITIAL;
        do {
            KeyScanCursor<byte[]> page = link.await(link.commands()
                    .scan(cursor, ScanArgs.Builder.matches(pattern).limit(1000)));
            for (byte[] key : page.getKeys()) {
                String k = text(key);
                String namespace = k.substring(prefix.length() + 2, k.length() - "}:epoch".length());
                if (NAMESPACE.matcher(namespace).matches()) {
                    namespaces.add(namespace);
                }
            }
            cursor = page;
        } while (!cursor.isFinished());
        Instant now = clock.instant();
        namespaces.forEach(ns -> rearm(ns, "", now));
        LOG.log(System.Logger.Level.WARNING, "{0}: re-armed namespaces {1}", description, namespaces);
        return namespaces;
    }

    /** Re-arms one namespace; see {@link #rearm()}. */
    public void rearm(String namespace) {
        rearm(IdempotencyKey.validateNamespace(namespace), "", clock.instant());
    }

    private void rearm(String namespace, String expected, Instant now) {
        byte[][] k = {new Keys(prefix, namespace).epoch()};
        byte[][] a = {millis(now), utf8(UUID.randomUUID().toString()), utf8(expected)};
        witnessed(
                namespace,
                text(link.call(Script.REARM, ScriptOutputType.VALUE, k, a).await()),
                0);
    }

    @Override
    public UpdateResult complete(IdempotencyKey key, String owner, byte @Nullable [] result, Duration retention) {
        return update(Script.COMPLETE, key, owner, retention, optional(result));
    }

    @Override
    public UpdateResult release(IdempotencyKey key, String owner) {
        return update(Script.RELEASE, key, owner, Duration.ZERO, NONE);
    }

    @Override
    public UpdateResult extend(IdempotencyKey key, String owner, Duration lease) {
        return update(Script.EXTEND, key, owner, lease, NONE);
    }

    private UpdateResult update(Script script, IdempotencyKey key, String owner, Duration span, byte[] result) {
        Objects.requireNonNull(owner, "owner");
        byte[][] k = {new Keys(prefix, key.namespace()).record(key)};
        byte[][] a = {
            utf8(owner),
            millis(clock.instant()),
            utf8(Long.toString(span.toMillis())),
            utf8(Long.toString(expiryMargin.toMillis())),
            result
        };
        return UpdateResult.valueOf(
                text(link.call(script, ScriptOutputType.VALUE, k, a).await()));
    }

    @Override
    public Optional<StoredRecord> lookup(IdempotencyKey key) {
        byte[] k = new Keys(prefix, key.namespace()).record(key);
        Instant now = clock.instant();
        List<KeyValue<byte[], byte[]>> fields =
                link.await(link.commands().hmget(k, utf8("s"), utf8("o"), utf8("t"), utf8("u"), utf8("f"), utf8("r")));
        byte[][] v = new byte[fields.size()][];
        for (int i = 0; i < v.length; i++) {
            v[i] = fields.get(i).getValueOrElse(null);
        }
        if (v[0] == null) {
            return Optional.empty();
        }
        StoredRecord.State state = text(v[0]).equals("D") ? StoredRecord.State.DONE : StoredRecord.State.PROCESSING;
        Instant expiresAt = instant(v[3]);
        if (state == StoredRecord.State.DONE && !now.isBefore(expiresAt)) {
            return Optional.empty();
        }
        return Optional.of(StoredRecord.builder(key, state)
                .owner(text(v[1]))
                .fencingToken(number(v[2]))
                .expiresAt(expiresAt)
                .fingerprint(v[4] == null ? null : text(v[4]))
                .result(v[5])
                .build());
    }

    @Override
    public String describe() {
        return description;
    }

    @Override
    public void close() {
        link.close();
    }

    private static void ensureDistinct(List<ClaimRequest> requests) {
        Set<String> seen = new HashSet<>();
        for (ClaimRequest r : requests) {
            if (!seen.add(r.key().storageId())) {
                throw new IllegalArgumentException(
                        "batch claims key " + r.key().logId() + " twice: deduplicate a batch before claiming it");
            }
        }
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] millis(Instant t) {
        return utf8(Long.toString(t.toEpochMilli()));
    }

    private static byte[] optional(byte @Nullable [] value) {
        if (value == null) {
            return NONE;
        }
        byte[] out = new byte[value.length + 1];
        out[0] = '+';
        System.arraycopy(value, 0, out, 1, value.length);
        return out;
    }

    private static @Nullable Object at(List<Object> list, int i) {
        return i < list.size() ? list.get(i) : null;
    }

    @SuppressWarnings("unchecked")
    private static List<Object> list(Object o) {
        return (List<Object>) o;
    }

    private static String text(@Nullable Object o) {
        if (o instanceof byte[] b) {
            return new String(b, StandardCharsets.UTF_8);
        }
        throw new IllegalStateException("expected a string from Redis, got " + o);
    }

    private static @Nullable String textOrNull(@Nullable Object o) {
        return o instanceof byte[] ? text(o) : null;
    }

    private static byte @Nullable [] bytes(@Nullable Object o) {
        return o instanceof byte[] b ? b : null;
    }

    private static long number(@Nullable Object o) {
        if (o instanceof Long l) {
            return l;
        }
        return Long.parseLong(text(o));
    }

    private static Instant instant(@Nullable Object o) {
        return Instant.ofEpochMilli(number(o));
    }

    /** Redis key names of one namespace; all share the hash tag {@code {prefix:namespace}}. */
    private record Keys(String prefix, String namespace) {
        private String tag() {
            return "{" + prefix + ":" + namespace + "}";
        }

        byte[] epoch() {
            return utf8(tag() + ":epoch");
        }

        byte[] fence() {
            return utf8(tag() + ":fence");
        }

        byte[] record(IdempotencyKey key) {
            return utf8(tag() + ":r:" + key.storedKey());
        }
    }

    /**
     * What a store does after it detected lost marks. Either way the detecting claim fails closed and the listener is
     * told; the policies differ in who ends it.
     */
    public static final class MarkLossPolicy {
        private final @Nullable Duration rearmAfter;

        private MarkLossPolicy(@Nullable Duration rearmAfter) {
            this.rearmAfter = rearmAfter;
        }

        /** The default: claims fail closed until an operator calls {@link RedisStore#rearm()}. */
        public static MarkLossPolicy untilRearmed() {
            return new MarkLossPolicy(null);
        }

        /**
         * Claims fail closed for {@code delay} after the detection (by the store's clock), then the first claim
         * re-arms the namespace. Choose it only if you accept that keys completed before the loss may run again; a
         * delay of at least the longest lease lets the handlers that held claims before the loss finish first.
         */
        public static MarkLossPolicy rearmAfter(Duration delay) {
            if (delay == null || delay.isNegative()) {
                throw new ConfigurationException("rearmAfter must be zero or positive, got " + delay);
            }
            return new MarkLossPolicy(delay);
        }

        @Override
        public String toString() {
            return rearmAfter == null ? "untilRearmed" : "rearmAfter(" + rearmAfter + ")";
        }
    }

    /**
     * Redis lost marks of a namespace (it restarted without persistence, or a failover lost writes): a key that
     * looks new may have been processed already, so the claim is refused. Retry later; an operator re-arms the store
     * with {@link RedisStore#rearm()}.
     */
    public static final class MarksLostException extends StoreUnavailableException {
        private static final long serialVersionUID = 1L;

        private final String namespace;
        private final Instant detectedAt;

        MarksLostException(String store, String namespace, Instant detectedAt, MarkLossPolicy policy) {
            super(
                    store,
                    "marks lost in namespace '" + namespace
                            + "': its sentinel key is gone or was replaced (detected at "
                            + detectedAt + "; Redis restarted without persistence, a failover lost writes, or the"
                            + " key was deleted), so keys that look new may have been processed already; claims fail"
                            + " closed until an operator calls RedisStore.rearm() (mark-loss policy " + policy + ")",
                    null);
            this.namespace = namespace;
            this.detectedAt = detectedAt;
        }

        public String namespace() {
            return namespace;
        }

        /** When the first store noticed the loss. */
        public Instant detectedAt() {
            return detectedAt;
        }
    }

    /**
     * Builds a {@link RedisStore}. Each setter validates its value at once. The store is immutable once built, and
     * thread-safe.
     */
    public static final class Builder extends RedisBuilder<Builder> {
        private Duration expiryMargin = Duration.ofHours(1);
        private MarkLossPolicy markLossPolicy = MarkLossPolicy.untilRearmed();
        private IdempotencyListener listener = IdempotencyListener.NONE;

        private Builder(@Nullable RedisURI uri, @Nullable RedisClient client) {
            super(uri, client);
        }

        /**
         * How long past its deadline a record stays in Redis before its TTL removes it; an owner can still complete a
         * lapsed claim nobody took over within it. Default 1 h.
         */
        public Builder expiryMargin(Duration expiryMargin) {
            this.expiryMargin = positive("expiryMargin", expiryMargin);
            return this;
        }

        /** What happens after lost marks are detected. Default {@link MarkLossPolicy#untilRearmed()}. */
        public Builder markLossPolicy(MarkLossPolicy policy) {
            this.markLossPolicy = Objects.requireNonNull(policy, "policy");
            return this;
        }

        /** Told of {@link IdempotencyEvent.Type#MARKS_LOST}; its failures are logged and ignored. Default none. */
        public Builder listener(IdempotencyListener listener) {
            this.listener = Objects.requireNonNull(listener, "listener");
            return this;
        }

        public RedisStore build() {
            return buildWith((client, owns, description) -> new RedisStore(this, client, owns, description));
        }
    }
}
