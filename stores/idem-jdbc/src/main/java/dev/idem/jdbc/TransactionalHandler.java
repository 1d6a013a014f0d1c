package dev.idem.jdbc;

import dev.idem.DeadLetterException;
import dev.idem.Outcome;
import java.sql.Connection;

/**
 * Work on a connection, in a transaction Idem opened or joined: a {@link JdbcInbox} handler, a business guard's side
 * effect (which runs only when the guarded change applied; its outcome becomes the guard's), an {@link
 * OwnTransaction}'s work. A handler that writes to the database in the dedup record's transaction. It gets that transaction's connection and
 * must neither commit, roll back nor close it. It answers with an {@link Outcome}:
 *
 * <ul>
 *   <li>{@link Outcome.Type#PROCESSED} or {@link Outcome.Type#DUPLICATE} (a business guard found the effect already
 *       applied): its writes and the dedup record commit together;
 *   <li>{@link Outcome.Type#OUT_OF_ORDER}, {@link Outcome.Type#FAILED} or {@link Outcome.Type#REJECTED}: its writes and
 *       the dedup record are rolled back, so the redelivery runs again.
 * </ul>
 *
 * Throwing rolls back the same way and ends as {@code FAILED} ({@code REJECTED} for a {@link DeadLetterException});
 * a deadlock it runs into is retried.
 */
@FunctionalInterface
public interface TransactionalHandler {
    /** Writes nothing and answers {@code PROCESSED}: a guard's side effect when the guarded change is all. */
    TransactionalHandler NONE = c -> Outcome.processed();

    Outcome handle(Connection connection) throws Exception;
}
