package dev.idem.jdbc;

import dev.idem.HandlingContext;
import dev.idem.Outcome;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.IntFunction;

/**
 * The work of a {@link JdbcInbox} batch: it gets the transaction's connection and every new delivery of the batch at
 * once (duplicates are answered without it), so that it can send its writes as JDBC batches ({@code addBatch} /
 * {@code executeBatch}). Each context's {@link HandlingContext#index() index} is the delivery's position in the
 * caller's list. It answers one {@link Outcome} per context, in the same order, with the meaning {@link
 * TransactionalHandler} gives them; it must neither commit, roll back nor close the connection.
 *
 * <p>A call may be rolled back and made again with fewer contexts: when an outcome is not final (the rest of the batch
 * runs again without that delivery), when it throws (the batch is split until the delivery that makes it throw runs
 * alone and ends {@link Outcome#ofException}), or after a deadlock. Only the writes of the last call commit. An answer
 * of another size is a programming error: every delivery of the call ends {@code FAILED} and nothing is committed.
 */
@FunctionalInterface
public interface BatchHandler {
    List<Outcome> handle(Connection connection, List<HandlingContext> fresh) throws Exception;

    /**
     * One {@link TransactionalHandler} per delivery, run one after the other on the batch's connection: {@code
     * handlerOf} gets the delivery's index in the caller's list.
     */
    static BatchHandler eachOf(IntFunction<TransactionalHandler> handlerOf) {
        Objects.requireNonNull(handlerOf, "handlerOf");
        return (connection, fresh) -> {
            List<Outcome> outcomes = new ArrayList<>(fresh.size());
            for (HandlingContext context : fresh) {
                outcomes.add(Objects.requireNonNull(
                        handlerOf.apply(context.index()).handle(connection),
                        "a handler must return an Outcome, not null"));
            }
            return outcomes;
        };
    }
}
