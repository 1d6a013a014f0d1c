package dev.idem.redis;

import static dev.idem.redis.Codec.at;
import static dev.idem.redis.Codec.instant;
import static dev.idem.redis.Codec.list;
import static dev.idem.redis.Codec.millis;
import static dev.idem.redis.Codec.number;
import static dev.idem.redis.Codec.optional;
import static dev.idem.redis.Codec.optionalBytes;
import static dev.idem.redis.Codec.optionalText;
import static dev.idem.redis.Codec.text;
import static dev.idem.redis.Codec.utf8;

import dev.idem.ConfigurationException;
import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyKey;
import dev.idem.IdempotencyListener;
import dev.idem.StoreUnavailableException;
import dev.idem.internal.Daemons;
import dev.idem.internal.SafeListener;
import dev.idem.internal.UnderWay;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.Completion;
import dev.idem.spi.IdempotencyStore;
import dev.idem.spi.StoredRecord;
import dev.idem.spi.UpdateResult;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.async.RedisKeyAsyncCommands;
import io.lettuce.core.cluster.RedisClusterClient;
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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * A lease store in Redis: standalone, Sentinel-managed or a Redis Cluster, on Lettuce. Every operation is one atomic
 * step on the server: one Lua script (sent by SHA, its source re-sent when the server has lost its script cache).
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
 * result. The deadline is computed from the server's {@code TIME} (the default, see {@link Builder#useServerClock}),
 * or from the store's {@link Clock} when one is set, and decides; the Redis TTL (deadline plus {@link Builder#expiryMargin}) only collects
 * garbage.
 *
 * <p><b>Fencing tokens</b> come from the counter {@code {prefix:namespace}:fence}: a claim hands out {@code
 * max(counter, server milliseconds × 1000) + 1}. On one server they only grow; after a restart or a failover that lost
 * the last claims, the server-time floor keeps them above every token handed out before, as long as the server clocks
 * agree to within the outage and the namespace averaged fewer than 1000 claims per millisecond. {@link #rearm()}
 * raises the counter to at least the highest token the re-arming store has seen.
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
 * calls {@link #rearm()} (or the {@link MarkLossPolicy} re-arms after a delay). A store that finds a namespace empty
 * does not arm it at once: it marks it "arming" and waits {@link Builder#armingDelay}, while every store checks the
 * namespaces it uses every third of that delay; a live store that knew the namespace sees the arming, takes it for a
 * loss, and the waiting store fails closed too. With no such store alive, an empty Redis cannot be told from a new
 * one.
 *
 * <p>Thread-safe; its settings are immutable. It connects on first use, and {@link #close()} stops its namespace
 * checks and closes the connection, and the client only when the store created it.
 */
public final class RedisStore implements IdempotencyStore {
    private static final System.Logger LOG = System.getLogger(RedisStore.class.getName());
    private static final Pattern NAMESPACE = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,63}");
    private static final Pattern ARMED_EPOCH = Pattern.compile("\\d+:.*");
    private static final int BATCH_CHUNK = 256;
    /** "Now" for the scripts in server-clock mode: they read Redis's {@code TIME}. */
    private static final byte[] SERVER_NOW = {};
    /** The claim script's marks: the claims' owner, fingerprint and lease given once, or once per claim. */
    private static final byte[] SHARED_TERMS = utf8("=");

    private static final byte[] OWN_TERMS = utf8("*");

    private final RedisLink link;
    private final String prefix;
    private final Clock clock;
    private final boolean serverClock;
    private final Duration armingDelay;
    private final byte[] expiryMarginArg;
    private final byte[] armingDelayArg;
    private final Duration commandTimeout;
    private final MarkLossPolicy markLossPolicy;
    private final IdempotencyListener listener;
    private final String description;
    private final Witnesses witnesses = new Witnesses();
    private final ConcurrentHashMap<String, Keys> keysByNamespace = new ConcurrentHashMap<>();
    /** Completions sent and not yet answered. */
    private final Set<CompletableFuture<byte[]>> underWay = ConcurrentHashMap.newKeySet();

    private final Thread awaitCompletionsAtExit = new Thread(this::awaitCompletionsUnderWay, "idem-redis-exit");
    private final @Nullable ScheduledThreadPoolExecutor namespaceChecks;

    private RedisStore(Builder b, RedisLink.Endpoint endpoint, boolean ownsClient, String description) {
        this.prefix = b.prefix;
        this.clock = b.clock;
        this.serverClock = b.serverClock();
        this.armingDelay = b.armingDelay;
        this.expiryMarginArg = number(b.expiryMargin.toMillis());
        this.armingDelayArg = number(armingDelay.toMillis());
        this.commandTimeout = b.commandTimeout;
        this.markLossPolicy = b.markLossPolicy;
        this.listener = new SafeListener(b.listener);
        this.description = description + " prefix '" + b.prefix + "'";
        this.link = new RedisLink(endpoint, ownsClient, b.commandTimeout, this.description);
        this.namespaceChecks = armingDelay.isZero() ? null : startNamespaceChecks();
        UnderWay.awaitAtExit(awaitCompletionsAtExit);
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

    /**
     * A builder for a store on a Redis Cluster that creates (and on {@link #close()} shuts down) its own cluster
     * client from one or more seed nodes, e.g. {@code redis://10.0.0.1:7000}; the client follows failovers and slot
     * moves by re-reading the topology.
     */
    public static Builder clusterBuilder(String... seedUris) {
        if (seedUris.length == 0) {
            throw new ConfigurationException("a Redis Cluster needs at least one seed node, e.g. redis://host:7000");
        }
        return new Builder(Arrays.stream(seedUris).map(RedisLink::parse).toList(), null);
    }

    /** A builder for a store on a Redis Cluster client the caller owns: the store never shuts it down. */
    public static Builder builder(RedisClusterClient client) {
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
     * The first claim of a namespace found empty waits {@link Builder#armingDelay} (see the class comment).
     */
    @Override
    public List<ClaimResult> claimAll(List<ClaimRequest> requests) {
        long resendsBefore = link.resends();
        List<ClaimResult> results = claimEach(requests);
        return link.resends() == resendsBefore ? results : askAgainIfOvertaken(requests, results);
    }

    /**
     * The claims answered "in progress", asked again once the completions under way are answered: a script sent
     * again by its source (after NOSCRIPT) while these claims were under way runs after them, so a claim may have
     * found its key still in progress by a completion this store had sent before it.
     */
    private List<ClaimResult> askAgainIfOvertaken(List<ClaimRequest> requests, List<ClaimResult> results) {
        List<Integer> inProgress = new ArrayList<>();
        for (int i = 0; i < results.size(); i++) {
            if (results.get(i) instanceof ClaimResult.InProgress) {
                inProgress.add(i);
            }
        }
        if (inProgress.isEmpty()) {
            return results;
        }
        awaitCompletionsUnderWay();
        List<ClaimResult> again =
                claimEach(inProgress.stream().map(requests::get).toList());
        List<ClaimResult> merged = new ArrayList<>(results);
        for (int n = 0; n < inProgress.size(); n++) {
            merged.set(inProgress.get(n), again.get(n));
        }
        return merged;
    }

    private List<ClaimResult> claimEach(List<ClaimRequest> requests) {
        if (requests.isEmpty()) {
            return List.of();
        }
        ClaimResult[] results = new ClaimResult[requests.size()];
        List<Chunk> pending;
        if (requests.size() == 1) { // a Guard's single claim: nothing to deduplicate, group or sort
            pending = List.of(new Chunk(requests.get(0).key().namespace(), List.of(0)));
        } else {
            ensureDistinct(requests);
            pending = chunks(requests);
        }
        Long giveUpArming = null; // set by the first reply that asks to wait: a slow first call is not arming time
        for (boolean firstRound = true; !pending.isEmpty(); firstRound = false) {
            byte[] now = now();
            List<RedisLink.Call<List<Object>>> calls = new ArrayList<>(pending.size());
            for (Chunk chunk : pending) {
                calls.add(claimCall(chunk.namespace(), chunk.of(requests), now));
            }
            List<Chunk> again = new ArrayList<>();
            long armingLeft = 0;
            MarksLostException lost = null;
            for (int c = 0; c < calls.size(); c++) {
                Chunk chunk = pending.get(c);
                List<Object> reply = calls.get(c).await();
                switch (text(reply.get(0))) {
                    case "OK" -> accept(chunk, reply, requests, results);
                    case "ARMING" -> {
                        again.add(chunk);
                        armingLeft = Math.max(armingLeft, number(reply.get(1)));
                    }
                    default -> {
                        String marker = text(reply.get(1));
                        if (firstRound && rearmedByPolicy(chunk.namespace(), marker, instant(reply.get(3)))) {
                            again.add(chunk);
                        } else if (lost == null) {
                            lost = marksLost(chunk.namespace(), marker);
                        }
                    }
                }
            }
            if (lost != null) {
                throw lost;
            }
            if (armingLeft > 0) {
                if (giveUpArming == null) {
                    giveUpArming = System.nanoTime()
                            + armingDelay.multipliedBy(2).plus(commandTimeout).toNanos();
                }
                awaitArming(armingLeft, giveUpArming);
            }
            pending = again;
        }
        return Arrays.asList(results);
    }

    /** Up to {@value #BATCH_CHUNK} request indexes of one namespace, in key order. */
    private record Chunk(String namespace, List<Integer> indexes) {
        List<ClaimRequest> of(List<ClaimRequest> requests) {
            if (requests.size() == 1) { // a Guard's single claim
                return requests;
            }
            List<ClaimRequest> picked = new ArrayList<>(indexes.size());
            for (int i : indexes) {
                picked.add(requests.get(i));
            }
            return picked;
        }
    }

    private static List<Chunk> chunks(List<ClaimRequest> requests) {
        Map<String, List<Integer>> byNamespace = new LinkedHashMap<>();
        for (int i = 0; i < requests.size(); i++) {
            byNamespace
                    .computeIfAbsent(requests.get(i).key().namespace(), ns -> new ArrayList<>())
                    .add(i);
        }
        List<Chunk> chunks = new ArrayList<>();
        for (Map.Entry<String, List<Integer>> group : byNamespace.entrySet()) {
            List<Integer> sorted = new ArrayList<>(group.getValue());
            sorted.sort(Comparator.comparing(i -> requests.get(i).key().storageId()));
            for (int from = 0; from < sorted.size(); from += BATCH_CHUNK) {
                chunks.add(new Chunk(
                        group.getKey(),
                        List.copyOf(sorted.subList(from, Math.min(sorted.size(), from + BATCH_CHUNK)))));
            }
        }
        return chunks;
    }

    private void accept(Chunk chunk, List<Object> reply, List<ClaimRequest> requests, ClaimResult[] results) {
        long highest = 0;
        long now = number(reply.get(2));
        for (int j = 0; j < chunk.indexes().size(); j++) {
            int i = chunk.indexes().get(j);
            results[i] = claimResult(requests.get(i), reply.get(3 + j), now);
            if (results[i] instanceof ClaimResult.Acquired acquired) {
                highest = Math.max(highest, acquired.fencingToken());
            }
        }
        witnesses.saw(chunk.namespace(), text(reply.get(1)), highest);
    }

    /** Sends the claim script for {@code claims} of one namespace; with no claims it only checks the namespace. */
    private RedisLink.Call<List<Object>> claimCall(String namespace, List<ClaimRequest> claims, byte[] now) {
        Keys keys = keys(namespace);
        Witnesses.Witness witness = witnesses.of(namespace);
        byte[][] k = new byte[2 + claims.size()][];
        boolean shared = sharedTerms(claims);
        int terms = shared ? Math.min(1, claims.size()) : claims.size();
        byte[][] a = new byte[7 + 3 * terms][];
        k[0] = keys.epoch();
        k[1] = keys.fence();
        a[0] = utf8(witness.epoch());
        a[1] = utf8(witness.epoch().isEmpty() ? UUID.randomUUID().toString() : "");
        a[2] = now;
        a[3] = expiryMarginArg;
        a[4] = number(witness.token());
        a[5] = armingDelayArg;
        a[6] = shared ? SHARED_TERMS : OWN_TERMS;
        for (int j = 0; j < claims.size(); j++) {
            k[2 + j] = keys.record(claims.get(j).key());
        }
        for (int j = 0; j < terms; j++) {
            ClaimRequest r = claims.get(j);
            a[7 + 3 * j] = utf8(r.owner());
            a[8 + 3 * j] = optional(r.fingerprint() == null ? null : utf8(r.fingerprint()));
            a[9 + 3 * j] = number(r.lease().toMillis());
        }
        return link.call(Script.CLAIM, ScriptOutputType.MULTI, k, a);
    }

    /** Whether every claim has the first one's owner, fingerprint and lease (a batch's usual case): sent once. */
    private static boolean sharedTerms(List<ClaimRequest> claims) {
        for (int j = 1; j < claims.size(); j++) {
            ClaimRequest first = claims.get(0);
            ClaimRequest r = claims.get(j);
            if (!(r.owner().equals(first.owner())
                    && Objects.equals(r.fingerprint(), first.fingerprint())
                    && r.lease().equals(first.lease()))) {
                return false;
            }
        }
        return true;
    }

    /** "Now" as the scripts take it: the store's clock, or {@code ""} for the server's. */
    private byte[] now() {
        return serverClock ? SERVER_NOW : millis(clock.instant());
    }

    @SuppressWarnings(
            "NullAway") // a stored result is `byte @Nullable []`: NullAway reads that only in JSpecify mode (JDK 22+)
    private static ClaimResult claimResult(ClaimRequest request, Object answer, long now) {
        if (answer instanceof Long token) { // a free key, claimed: its lease runs from the call's now
            return new ClaimResult.Claimed(
                    request.owner(),
                    token,
                    Instant.ofEpochMilli(now + request.lease().toMillis()));
        }
        List<Object> r = list(answer);
        return switch (text(r.get(0))) {
            case "C" -> new ClaimResult.Claimed(request.owner(), number(r.get(1)), instant(r.get(2)));
            case "T" -> new ClaimResult.TakenOver(request.owner(), number(r.get(1)), instant(r.get(2)), text(r.get(3)));
            case "I" -> new ClaimResult.InProgress(text(r.get(1)), instant(r.get(2)), optionalText(at(r, 3)));
            case "D" ->
                new ClaimResult.Done(
                        instant(r.get(1)), instant(r.get(2)), optionalText(at(r, 3)), optionalBytes(at(r, 4)));
            default -> throw new IllegalStateException("unexpected claim reply " + r.get(0));
        };
    }

    /** Waits for a namespace that another claim found empty to be armed, or gives up when that takes too long. */
    private void awaitArming(long millisLeft, long giveUpNanos) {
        if (System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millisLeft) > giveUpNanos) {
            throw new StoreUnavailableException(
                    description,
                    "a namespace stays in its arming delay (" + armingDelay + ") longer than expected: another store"
                            + " with a longer armingDelay is arming it; retry later",
                    null);
        }
        try {
            Thread.sleep(millisLeft + 1);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StoreUnavailableException(description, "interrupted while a namespace was being armed", e);
        }
    }

    private ScheduledThreadPoolExecutor startNamespaceChecks() {
        ScheduledThreadPoolExecutor checks =
                new ScheduledThreadPoolExecutor(1, Daemons.named("idem-redis-namespace-checks-" + prefix));
        long period = Math.max(1, armingDelay.toMillis() / 3);
        checks.scheduleWithFixedDelay(this::checkNamespaces, period, period, TimeUnit.MILLISECONDS);
        return checks;
    }

    /**
     * Checks every namespace this store has used: a sentinel gone, replaced or being armed afresh, or a fencing
     * counter below a token this store handed out, is a loss, reported once by the check that finds it. Survives any
     * exception (the next check runs anyway).
     */
    private void checkNamespaces() {
        byte[] now = now();
        for (String namespace : witnesses.namespaces()) {
            try {
                List<Object> reply = claimCall(namespace, List.of(), now).await();
                switch (text(reply.get(0))) {
                    case "OK" -> witnesses.saw(namespace, text(reply.get(1)), 0);
                    case "LOST" -> {
                        if (number(reply.get(2)) == 1) {
                            marksLost(namespace, text(reply.get(1)));
                        }
                    }
                    default -> {}
                }
            } catch (StoreUnavailableException e) {
                // Redis unreachable now: the next check tries again
            } catch (RuntimeException e) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        description + ": checking namespace '" + namespace + "' failed",
                        e);
            }
        }
    }

    private MarksLostException marksLost(String namespace, String marker) {
        MarksLostException e = new MarksLostException(description, namespace, detectedAt(marker), markLossPolicy);
        warn(namespace, Objects.requireNonNull(e.getMessage()));
        return e;
    }

    /** Under {@link MarkLossPolicy#rearmAfter}, re-arms a namespace whose loss is old enough by {@code now}. */
    private boolean rearmedByPolicy(String namespace, String marker, Instant now) {
        Duration delay = markLossPolicy.rearmAfter;
        Instant detectedAt = detectedAt(marker);
        if (delay == null || now.isBefore(detectedAt.plus(delay))) {
            return false;
        }
        rearm(namespace, marker);
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
     * namespaces this store has used and every namespace whose sentinel a scan of the prefix finds (on a Cluster,
     * the scan visits every master). From then on claims are answered again (keys whose marks were lost count as
     * new), with fencing tokens above every token this store has seen. Returns the namespaces re-armed.
     */
    public Set<String> rearm() {
        Set<String> namespaces = new TreeSet<>(witnesses.namespaces());
        byte[] pattern = utf8("{" + prefix + ":*}:epoch");
        for (RedisKeyAsyncCommands<byte[], byte[]> server : link.scanTargets()) {
            ScanCursor cursor = ScanCursor.INITIAL;
            do {
                KeyScanCursor<byte[]> page = link.await(
                        server.scan(cursor, ScanArgs.Builder.matches(pattern).limit(1000)));
                for (byte[] key : page.getKeys()) {
                    String k = text(key);
                    String namespace = k.substring(prefix.length() + 2, k.length() - "}:epoch".length());
                    if (NAMESPACE.matcher(namespace).matches()) {
                        namespaces.add(namespace);
                    }
                }
                cursor = page;
            } while (!cursor.isFinished());
        }
        namespaces.forEach(ns -> rearm(ns, ""));
        LOG.log(System.Logger.Level.WARNING, "{0}: re-armed namespaces {1}", description, namespaces);
        return namespaces;
    }

    /** Re-arms one namespace; see {@link #rearm()}. */
    public void rearm(String namespace) {
        rearm(IdempotencyKey.validateNamespace(namespace), "");
    }

    private void rearm(String namespace, String expected) {
        Keys keys = keys(namespace);
        byte[][] k = {keys.epoch(), keys.fence()};
        byte[][] a = {
            utf8(UUID.randomUUID().toString()),
            utf8(expected),
            number(witnesses.of(namespace).token())
        };
        Object epoch = link.call(Script.REARM, ScriptOutputType.VALUE, k, a).await();
        if (epoch != null && ARMED_EPOCH.matcher(text(epoch)).matches()) {
            witnesses.saw(namespace, text(epoch), 0);
        }
    }

    /**
     * Completes the owner's claim. A retry by the same owner after a lost reply (the first call reached Redis) answers
     * {@link UpdateResult#APPLIED} again and keeps the first result.
     */
    @Override
    public UpdateResult complete(IdempotencyKey key, String owner, byte @Nullable [] result, Duration retention) {
        return update(Script.COMPLETE, key, owner, retention, optional(result));
    }

    /**
     * Sends the completion and answers before Redis does: the caller's next command on the store's connection is
     * queued behind it and shares its round trip (Redis runs one connection's commands in order), so a guard's
     * completion costs no wait of its own. {@link #close()} waits for the completions still under way.
     */
    @Override
    public CompletionStage<UpdateResult> completeAsync(
            IdempotencyKey key, String owner, byte @Nullable [] result, Duration retention) {
        CompletableFuture<byte[]> reply = updateCall(Script.COMPLETE, key, owner, retention, optional(result))
                .answer();
        underWay.add(reply);
        reply.whenComplete((value, failure) -> underWay.remove(reply));
        return reply.thenApply(value -> UpdateResult.valueOf(text(value)));
    }

    /**
     * Completes every claim in one round trip: one script per completion, all sent at once (on a Cluster, each to the
     * master of its key). Retried by the same owners after a lost reply, each answers {@link UpdateResult#APPLIED}
     * again.
     */
    @Override
    public List<UpdateResult> completeAll(List<Completion> completions) {
        List<RedisLink.Call<byte[]>> calls = new ArrayList<>(completions.size());
        for (Completion c : completions) {
            calls.add(updateCall(Script.COMPLETE, c.key(), c.owner(), c.retention(), optional(c.result())));
        }
        List<UpdateResult> results = new ArrayList<>(calls.size());
        for (RedisLink.Call<byte[]> call : calls) {
            results.add(UpdateResult.valueOf(text(call.await())));
        }
        return results;
    }

    @Override
    public UpdateResult release(IdempotencyKey key, String owner) {
        return update(Script.RELEASE, key, owner, Duration.ZERO, Codec.NONE);
    }

    @Override
    public UpdateResult extend(IdempotencyKey key, String owner, Duration lease) {
        return update(Script.EXTEND, key, owner, lease, Codec.NONE);
    }

    private UpdateResult update(Script script, IdempotencyKey key, String owner, Duration span, byte[] result) {
        return UpdateResult.valueOf(
                text(updateCall(script, key, owner, span, result).await()));
    }

    private RedisLink.Call<byte[]> updateCall(
            Script script, IdempotencyKey key, String owner, Duration span, byte[] result) {
        Objects.requireNonNull(owner, "owner");
        byte[][] k = {keys(key.namespace()).record(key)};
        byte[][] a = {utf8(owner), now(), number(span.toMillis()), expiryMarginArg, result};
        return link.call(script, ScriptOutputType.VALUE, k, a);
    }

    @Override
    public Optional<StoredRecord> lookup(IdempotencyKey key) {
        byte[][] k = {keys(key.namespace()).record(key)};
        byte[][] a = {now()};
        List<Object> v = link.<List<Object>>call(Script.LOOKUP, ScriptOutputType.MULTI, k, a)
                .await();
        if (v.isEmpty()) {
            return Optional.empty();
        }
        StoredRecord.State state = text(v.get(0)).equals("D") ? StoredRecord.State.DONE : StoredRecord.State.PROCESSING;
        return Optional.of(StoredRecord.builder(key, state)
                .owner(text(v.get(1)))
                .fencingToken(number(v.get(2)))
                .expiresAt(instant(v.get(3)))
                .fingerprint(optionalText(at(v, 4)))
                .result(optionalBytes(at(v, 5)))
                .build());
    }

    @Override
    public String describe() {
        return description;
    }

    /** Stops the namespace checks and closes the connection (and the client, if the store created it). */
    @Override
    public void close() {
        if (namespaceChecks != null) {
            namespaceChecks.shutdownNow();
        }
        awaitCompletionsUnderWay();
        UnderWay.stopAwaitingAtExit(awaitCompletionsAtExit);
        link.close();
    }

    /** Waits up to the command timeout for the replies of completions sent without waiting. */
    private void awaitCompletionsUnderWay() {
        UnderWay.awaitAll(List.copyOf(underWay), commandTimeout);
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

    /** The key names of {@code namespace}, built once per namespace. */
    private Keys keys(String namespace) {
        return keysByNamespace.computeIfAbsent(namespace, ns -> new Keys(prefix, ns));
    }

    /**
     * Redis key names of one namespace; all share the hash tag {@code {prefix:namespace}}. The sentinel's and the
     * counter's names are shared by every call (the driver only reads them).
     */
    private static final class Keys {
        private final byte[] epoch;
        private final byte[] fence;
        private final String recordPrefix;

        Keys(String prefix, String namespace) {
            String tag = "{" + prefix + ":" + namespace + "}";
            this.epoch = utf8(tag + ":epoch");
            this.fence = utf8(tag + ":fence");
            this.recordPrefix = tag + ":r:";
        }

        byte[] epoch() {
            return epoch;
        }

        byte[] fence() {
            return fence;
        }

        byte[] record(IdempotencyKey key) {
            return utf8(recordPrefix + key.storedKey());
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
                            + "': its sentinel key is gone, replaced or being armed afresh, or its fencing counter"
                            + " fell below a token already handed out (detected at " + detectedAt
                            + "; Redis restarted without persistence, a failover lost writes, or the key was"
                            + " deleted), so keys that look new may have been processed already; claims fail"
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
        private Duration armingDelay = Duration.ofSeconds(3);
        private @Nullable Boolean serverClock;
        private MarkLossPolicy markLossPolicy = MarkLossPolicy.untilRearmed();
        private IdempotencyListener listener = IdempotencyListener.NONE;

        private Builder(@Nullable RedisURI uri, @Nullable RedisClient client) {
            super(uri, client);
        }

        private Builder(@Nullable List<RedisURI> clusterSeeds, @Nullable RedisClusterClient clusterClient) {
            super(clusterSeeds, clusterClient);
        }

        /**
         * How long past its deadline a record stays in Redis before its TTL removes it; an owner can still complete a
         * lapsed claim nobody took over within it: at least 1 ms (a Redis TTL is whole milliseconds). Default 1 h.
         */
        public Builder expiryMargin(Duration expiryMargin) {
            if (positive("expiryMargin", expiryMargin).toMillis() < 1) {
                throw new ConfigurationException("expiryMargin must be at least 1 ms (Redis TTLs are whole"
                        + " milliseconds), got " + expiryMargin + ": use the default (1 h) or minutes");
            }
            this.expiryMargin = expiryMargin;
            return this;
        }

        /**
         * How long the first claim of a namespace found empty (first use, or marks lost) waits before arming it; the
         * store checks the namespaces it uses every third of this, so that a live store that knew the namespace
         * reports the loss first and every store fails closed. Zero arms at once and runs no checks: a store started
         * after a loss then takes the empty namespace for a new one. Default 3 s.
         */
        public Builder armingDelay(Duration armingDelay) {
            if (armingDelay == null || armingDelay.isNegative()) {
                throw new ConfigurationException("armingDelay must be zero or positive, got " + armingDelay);
            }
            this.armingDelay = armingDelay;
            return this;
        }

        /**
         * Take "now" from the Redis server's {@code TIME} for every lease and retention deadline instead of the
         * store's clock, so that consumers whose clocks disagree still agree on when a lease ends (one clock: the
         * server's; on a Cluster, each master's for its slots). {@code true} cannot be combined with {@link #clock};
         * {@code false} computes deadlines on the system UTC clock of each consumer. Default on, unless a {@link
         * #clock} is set (a clock you drive, e.g. in tests, then decides).
         */
        public Builder useServerClock(boolean on) {
            this.serverClock = on;
            return this;
        }

        /** The server's clock unless switched off, or a clock was set and the server's was not asked for. */
        boolean serverClock() {
            return serverClock != null ? serverClock : !clockSet;
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

        /** The store; refuses {@link #useServerClock} together with an explicit {@link #clock}. */
        public RedisStore build() {
            if (Boolean.TRUE.equals(serverClock) && clockSet) {
                throw new ConfigurationException("useServerClock(true) takes every deadline from the Redis server, so"
                        + " the clock set on the builder would never be read: set one or the other");
            }
            return buildWith((endpoint, owns, description) -> new RedisStore(this, endpoint, owns, description));
        }
    }
}
