package dev.idem.spi;

import dev.idem.IdempotencyKey;
import dev.idem.StoreUnavailableException;
import java.time.Duration;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.stream.IntStream;
import org.jspecify.annotations.Nullable;

/**
 * A lease store: where claims live while a handler runs and where completions are remembered for the retention
 * window.
 *
 * <p>Every operation is atomic for its key. Operations that change a claim ({@link #complete}, {@link #release},
 * {@link #extend}) are owner-checked: a stale owner (whose lease expired and was taken over) never overwrites the
 * new owner's record, and learns it from the {@link UpdateResult}. Expected results are values; a store that
 * cannot answer throws {@link StoreUnavailableException}, and then the outcome of that call is unknown.
 *
 * <p>Every store passes the contract suite {@code dev.idem.testkit.IdempotencyStoreContract}. Implementations are
 * thread-safe.
 */
public interface IdempotencyStore extends AutoCloseable {

    /**
     * Claims a key for {@code request.owner()}:
     *
     * <ul>
     *   <li>no record, or a completed record past its retention → {@link ClaimResult.Claimed} with a new fencing
     *       token;
     *   <li>a live claim of the same owner (a retried claim after a client timeout) → {@link ClaimResult.Claimed}
     *       with that claim's fencing token, lease renewed;
     *   <li>a live claim of another owner → {@link ClaimResult.InProgress};
     *   <li>a claim whose lease has ended → {@link ClaimResult.TakenOver} with a new, greater fencing token;
     *   <li>a completed record within its retention → {@link ClaimResult.Done}.
     * </ul>
     */
    ClaimResult claim(ClaimRequest request);

    /**
     * Claims many keys in one round trip where the store allows it. Results come in the order of the requests;
     * keys are claimed in {@link IdempotencyKey#storageId()} order so that concurrent batches cannot deadlock.
     * Keys must be distinct ({@link IllegalArgumentException} otherwise). The default claims them one by one.
     */
    default List<ClaimResult> claimAll(List<ClaimRequest> requests) {
        var seen = new HashSet<String>();
        for (ClaimRequest r : requests) {
            if (!seen.add(r.key().storageId())) {
                throw new IllegalArgumentException(
                        "batch claims key " + r.key().logId() + " twice: deduplicate a batch before claiming it");
            }
        }
        ClaimResult[] results = new ClaimResult[requests.size()];
        IntStream.range(0, requests.size())
                .boxed()
                .sorted(Comparator.comparing(i -> requests.get(i).key().storageId()))
                .forEach(i -> results[i] = claim(requests.get(i)));
        return Arrays.asList(results);
    }

    /**
     * Marks the owner's claim done; the record is kept for {@code retention} so duplicates are recognised, with
     * the optional small {@code result}.
     */
    UpdateResult complete(IdempotencyKey key, String owner, byte @Nullable [] result, Duration retention);

    /**
     * Sends {@link #complete} without waiting for the store's answer where the store can: the stage completes when the
     * answer comes (a failure is a {@link StoreUnavailableException}: the completion's fate is unknown, as for {@link
     * #complete}). A pipelining store (Redis) answers the caller before its reply, so that the caller's next command
     * shares the round trip. The default completes at once.
     */
    default CompletionStage<UpdateResult> completeAsync(
            IdempotencyKey key, String owner, byte @Nullable [] result, Duration retention) {
        try {
            return CompletableFuture.completedFuture(complete(key, owner, result, retention));
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /**
     * Completes many claims in one round trip where the store allows it; results come in the order of the
     * completions. The default completes them one by one, in {@link IdempotencyKey#storageId()} order.
     */
    default List<UpdateResult> completeAll(List<Completion> completions) {
        UpdateResult[] results = new UpdateResult[completions.size()];
        IntStream.range(0, completions.size())
                .boxed()
                .sorted(Comparator.comparing(i -> completions.get(i).key().storageId()))
                .forEach(i -> {
                    Completion c = completions.get(i);
                    results[i] = complete(c.key(), c.owner(), c.result(), c.retention());
                });
        return Arrays.asList(results);
    }

    /** Removes the owner's claim so that a redelivery can run (the handler failed, nothing was applied). */
    UpdateResult release(IdempotencyKey key, String owner);

    /**
     * Renews the owner's lease to {@code lease} from now. On a record this owner has already completed it answers
     * {@link UpdateResult#APPLIED} and changes nothing (a watchdog tick that raced the completion).
     */
    UpdateResult extend(IdempotencyKey key, String owner, Duration lease);

    /** The live record of a key: a claim in progress, or a completion within its retention. */
    Optional<StoredRecord> lookup(IdempotencyKey key);

    /** A short description for messages and logs, e.g. {@code "in-memory"}, {@code "postgresql idem_keys"}. */
    String describe();

    /** Releases what the store owns (connections it created). Idempotent. */
    @Override
    void close();
}
