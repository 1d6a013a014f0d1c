package dev.idem;

/**
 * A guarded handler. It runs only when the guard holds the key, and answers with an outcome: usually {@link
 * Outcome#processed()}, or what a business guard decided ({@link Outcome.Type#DUPLICATE}, {@link
 * Outcome.Type#OUT_OF_ORDER}, {@link Outcome.Type#REJECTED}).
 *
 * <p>Throwing means the effect was not applied: the claim is released so a redelivery can run. Throw a {@link
 * DeadLetterException} for input that can never be handled.
 */
@FunctionalInterface
public interface Handler {
    Outcome handle(HandlingContext context) throws Exception;
}
