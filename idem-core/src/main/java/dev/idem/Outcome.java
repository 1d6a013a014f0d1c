package dev.idem;

import java.time.Duration;
import java.util.Arrays;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * What happened to one delivery, and so what the broker adapter must do with it ({@link #action()}).
 *
 * <p>Immutable and thread-safe. Build one with the static factories.
 */
public final class Outcome {

    /** The six outcomes of a handling. */
    public enum Type {
        /** The effect was applied now. Ack. */
        PROCESSED(Action.ACK),
        /** The effect was already applied (or a later state reached). Ack, and count it. */
        DUPLICATE(Action.ACK),
        /** Another consumer holds the key right now, or the store cannot tell yet. Retry later, never ack. */
        IN_PROGRESS(Action.RETRY),
        /** The effect cannot apply yet (row missing, earlier state or version). Retry later with backoff. */
        OUT_OF_ORDER(Action.RETRY),
        /** The handler threw a transient error; nothing was marked. Retry with backoff. */
        FAILED(Action.RETRY),
        /** Bad input or an impossible transition. Dead-letter at once with the reason. */
        REJECTED(Action.DEAD_LETTER);

        private final Action action;

        Type(Action action) {
            this.action = action;
        }

        public Action action() {
            return action;
        }
    }

    /** What a broker adapter does with a delivery. */
    public enum Action {
        /** Acknowledge / commit the offset: the message is finished. */
        ACK,
        /** Do not acknowledge; have the message delivered again later. */
        RETRY,
        /** Move the message to a dead-letter destination with the reason, then acknowledge it. */
        DEAD_LETTER
    }

    private final Type type;
    private final String reason;
    private final @Nullable Duration retryAfter;
    private final byte @Nullable [] result;
    private final @Nullable Throwable cause;
    /**
     * The owner whose claim's completion was written in the transaction that applied this outcome, or null; and
     * whether that transaction answers a final outcome only once it has committed. Not part of equality: bookkeeping
     * between a store and the guard, not what happened to the message.
     */
    private final @Nullable String completedBy;

    private final boolean completionCommitted;

    private Outcome(
            Type type,
            String reason,
            @Nullable Duration retryAfter,
            byte @Nullable [] result,
            @Nullable Throwable cause,
            @Nullable String completedBy,
            boolean completionCommitted) {
        this.type = Objects.requireNonNull(type, "type");
        this.reason = Objects.requireNonNull(reason, "reason");
        this.retryAfter = retryAfter;
        this.result = result == null ? null : result.clone();
        this.cause = cause;
        this.completedBy = completedBy;
        this.completionCommitted = completionCommitted;
    }

    private Outcome(
            Type type,
            String reason,
            @Nullable Duration retryAfter,
            byte @Nullable [] result,
            @Nullable Throwable cause) {
        this(type, reason, retryAfter, result, cause, null, false);
    }

    public static Outcome processed() {
        return new Outcome(Type.PROCESSED, "applied", null, null, null);
    }

    /** Applied; {@code result} (small, e.g. a response body) is stored and handed to later duplicates. */
    public static Outcome processed(byte @Nullable [] result) {
        return new Outcome(Type.PROCESSED, "applied", null, result, null);
    }

    public static Outcome processed(String reason) {
        return new Outcome(Type.PROCESSED, reason, null, null, null);
    }

    public static Outcome duplicate(String reason) {
        return new Outcome(Type.DUPLICATE, reason, null, null, null);
    }

    public static Outcome duplicate(String reason, byte @Nullable [] storedResult) {
        return new Outcome(Type.DUPLICATE, reason, null, storedResult, null);
    }

    public static Outcome inProgress(String reason, @Nullable Duration retryAfter) {
        return new Outcome(Type.IN_PROGRESS, reason, retryAfter, null, null);
    }

    public static Outcome outOfOrder(String reason) {
        return new Outcome(Type.OUT_OF_ORDER, reason, null, null, null);
    }

    public static Outcome failed(String reason, @Nullable Throwable cause) {
        return new Outcome(Type.FAILED, reason, null, null, cause);
    }

    public static Outcome rejected(String reason) {
        return new Outcome(Type.REJECTED, reason, null, null, null);
    }

    public static Outcome rejected(String reason, @Nullable Throwable cause) {
        return new Outcome(Type.REJECTED, reason, null, null, cause);
    }

    /**
     * The outcome of a handler that threw {@code e}: {@code REJECTED} for a {@link DeadLetterException}, else {@code
     * FAILED} naming the exception (an {@link InterruptedException} also restores the thread's interrupt flag).
     */
    public static Outcome ofException(Exception e) {
        if (e instanceof DeadLetterException dead) {
            return rejected(String.valueOf(dead.getMessage()), dead);
        }
        if (e instanceof InterruptedException) {
            Thread.currentThread().interrupt();
            return failed("handler interrupted", e);
        }
        return failed("handler threw " + e.getClass().getName() + ": " + e.getMessage(), e);
    }

    public Type type() {
        return type;
    }

    public Action action() {
        return type.action();
    }

    /** Why: readable, never the payload. */
    public String reason() {
        return reason;
    }

    /** A suggested delay before the retry (for {@link Type#IN_PROGRESS}: until the holder's lease ends). */
    public Optional<Duration> retryAfter() {
        return Optional.ofNullable(retryAfter);
    }

    /** The result stored by the first handling (on {@link Type#DUPLICATE}) or by this one. */
    public Optional<byte[]> result() {
        return Optional.ofNullable(result).map(byte[]::clone);
    }

    /** The exception behind a {@link Type#FAILED} or {@link Type#REJECTED} outcome. */
    public Optional<Throwable> cause() {
        return Optional.ofNullable(cause);
    }

    /** True when the message is finished with ({@link Action#ACK}). */
    public boolean isFinal() {
        return type.action() == Action.ACK;
    }

    /** The same outcome with another reason. */
    public Outcome withReason(String newReason) {
        return new Outcome(type, newReason, retryAfter, result, cause, completedBy, completionCommitted);
    }

    /**
     * This final outcome, noting that the completion of {@code context}'s claim was written in the very transaction
     * that applied it (a store's in-transaction completion, e.g. {@code JdbcStore.completeInTransaction}): the guard
     * records no completion of its own for that claim, and reads the claim back to learn that the transaction
     * committed. For stores; a handler returns what the store answered. An outcome noted for another claim's owner
     * changes nothing.
     *
     * @throws IllegalArgumentException when this outcome is not final: only a final outcome is completed
     */
    public Outcome withCompletionRecorded(HandlingContext context) {
        return noted(context, false);
    }

    /**
     * {@link #withCompletionRecorded}, for a transaction that answers a final outcome only once it has committed (e.g.
     * {@code OwnTransaction}'s): the guard does not read the claim back.
     *
     * @throws IllegalArgumentException when this outcome is not final: only a final outcome is completed
     */
    public Outcome withCompletionCommitted(HandlingContext context) {
        return noted(context, true);
    }

    private Outcome noted(HandlingContext context, boolean committed) {
        if (!isFinal()) {
            throw new IllegalArgumentException(
                    "only a final outcome (PROCESSED, DUPLICATE) completes a claim, got " + this);
        }
        return new Outcome(type, reason, retryAfter, result, cause, context.owner(), committed);
    }

    /** True when this outcome's completion was written for {@code owner}'s claim with the effect. */
    boolean completionRecordedFor(String owner) {
        return owner.equals(completedBy);
    }

    /** True when the completion noted on this outcome is known committed with it (no read-back needed). */
    boolean completionCommitted() {
        return completionCommitted;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Outcome other
                && type == other.type
                && reason.equals(other.reason)
                && Objects.equals(retryAfter, other.retryAfter)
                && Arrays.equals(result, other.result)
                && Objects.equals(cause, other.cause);
    }

    @Override
    public int hashCode() {
        return Objects.hash(type, reason, retryAfter, Arrays.hashCode(result));
    }

    @Override
    public String toString() {
        return type + (retryAfter == null ? "" : " (retry after " + retryAfter.toMillis() + " ms)") + ": " + reason;
    }
}
