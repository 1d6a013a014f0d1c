package dev.idem.jdbc;

import dev.idem.DeadLetterException;
import dev.idem.Outcome;
import javax.sql.DataSource;

/**
 * Runs guarded work in a transaction of its own: commits when the outcome is final ({@code PROCESSED}, {@code
 * DUPLICATE}), rolls back otherwise. Use it to combine business guards in one transaction, e.g. create-or-apply:
 *
 * <pre>{@code
 * Outcome o = Transactions.run(dataSource, c -> event.isCreate()
 *         ? newOrders.insertOnce(c, row, SideEffect.NONE)
 *         : orders.apply(c, event.orderId(), event.type(), Assignments.of(), charge));
 * }</pre>
 *
 * Never throws for a message-level problem: a {@link DeadLetterException} ends {@code REJECTED}, any other exception
 * or an unreachable database ends {@code FAILED}, both rolled back.
 */
public final class Transactions {
    private Transactions() {}

    public static Outcome run(DataSource dataSource, TransactionalHandler work) {
        return OwnTransaction.of(dataSource).run(work);
    }
}
