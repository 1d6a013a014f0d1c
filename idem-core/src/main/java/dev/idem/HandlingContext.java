package dev.idem;

import java.time.Duration;
import java.util.Objects;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * What a handler knows about its claim. Immutable; the guard builds it, handlers only read it.
 *
 * <ul>
 *   <li>{@link #key()}: the validated key being handled;
 *   <li>{@link #delivery()}: the delivery as it came in;
 *   <li>{@link #index()}: its position in a batch ({@link Guard#handleAll}), 0 for a single delivery;
 *   <li>{@link #owner()}: this handling's owner token;
 *   <li>{@link #fencingToken()}: grows with every claim of the namespace: write it next to the effect and refuse
 *       writes that carry a smaller one to fence out a stale owner whose lease was taken over;
 *   <li>{@link #tookOver()}: true when this handling took over an expired lease: a previous handling may have run
 *       part of the effect;
 *   <li>{@link #retention()}: how long the completion of this handling is remembered (the guard's retention);
 *   <li>{@link #guarded()}: false when the handler runs unguarded (fail-open while the store is unreachable).
 * </ul>
 */
public final class HandlingContext {
    static final Duration DEFAULT_RETENTION = Duration.ofDays(7);
    /** The owner of a handling that runs without a claim: the store could not be reached and the guard fails open. */
    static final String UNGUARDED = "unguarded";

    private final IdempotencyKey key;
    private final Delivery delivery;
    private final int index;
    private final String owner;
    private final long fencingToken;
    private final boolean tookOver;
    private final Duration retention;
    private final Consumer<BooleanSupplier> pauseLeaseRenewal;

    HandlingContext(
            IdempotencyKey key,
            Delivery delivery,
            int index,
            String owner,
            long fencingToken,
            boolean tookOver,
            Duration retention,
            Consumer<BooleanSupplier> pauseLeaseRenewal) {
        this.key = Objects.requireNonNull(key, "key");
        this.delivery = Objects.requireNonNull(delivery, "delivery");
        this.index = index;
        this.owner = Objects.requireNonNull(owner, "owner");
        this.fencingToken = fencingToken;
        this.tookOver = tookOver;
        this.retention = Objects.requireNonNull(retention, "retention");
        this.pauseLeaseRenewal = Objects.requireNonNull(pauseLeaseRenewal, "pauseLeaseRenewal");
    }

    /**
     * A context for calling a handler outside a guard, e.g. in a unit test of the handler; its {@link #retention()}
     * is the guard's default, 7 days.
     */
    public static HandlingContext of(
            IdempotencyKey key, Delivery delivery, int index, String owner, long fencingToken, boolean tookOver) {
        return new HandlingContext(
                key, delivery, index, owner, fencingToken, tookOver, DEFAULT_RETENTION, condition -> {});
    }

    public IdempotencyKey key() {
        return key;
    }

    public Delivery delivery() {
        return delivery;
    }

    public int index() {
        return index;
    }

    public String owner() {
        return owner;
    }

    public long fencingToken() {
        return fencingToken;
    }

    public boolean tookOver() {
        return tookOver;
    }

    public Duration retention() {
        return retention;
    }

    /**
     * Pauses the lease watchdog's renewals of this handling's claim while {@code condition} holds (asked when a renewal
     * falls due; one that throws counts as false). For a store that has written the claim's completion in the
     * handler's open transaction (e.g. {@code JdbcStore.completeInTransaction}): while that transaction lasts, its lock
     * on the claim keeps other consumers out and a renewal would only meet the lock (or, under repeatable read, make
     * the completion fail); once it ends without committing, renewals go on. Does nothing outside a guard or without
     * a watchdog.
     */
    public void pauseLeaseRenewalWhile(BooleanSupplier condition) {
        pauseLeaseRenewal.accept(Objects.requireNonNull(condition, "condition"));
    }

    /**
     * False when the handler runs without a claim: the store could not be reached and the guard fails open ({@link
     * Guard.StoreFailurePolicy#FAIL_OPEN}). There is then no claim to complete.
     */
    public boolean guarded() {
        return !owner.equals(UNGUARDED);
    }

    @Override
    public String toString() {
        return "HandlingContext[" + key.logId() + ", index=" + index + ", fencingToken=" + fencingToken
                + (tookOver ? ", tookOver" : "") + "]";
    }
}
