package dev.idem;

/**
 * What a handler knows about its claim.
 *
 * @param key the key being handled
 * @param owner this handling's owner token
 * @param fencingToken grows with every claim of the namespace: write it next to the effect and refuse writes that
 *     carry a smaller one to fence out a stale owner whose lease was taken over
 * @param tookOver true when this handling took over an expired lease: a previous handling may have run part of
 *     the effect
 */
public record HandlingContext(IdempotencyKey key, String owner, long fencingToken, boolean tookOver) {}
