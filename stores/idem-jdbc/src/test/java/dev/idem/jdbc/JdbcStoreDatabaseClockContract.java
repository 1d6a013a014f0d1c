package dev.idem.jdbc;

import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;

/**
 * The store contract with {@code useDatabaseClock(true)}: the cases that move time run on the database's real time,
 * and the delivery sequences run fewer times, since each lease lapse sleeps. Its cases run three at a time (each has
 * its own namespace): one after the other, their sleeps kept both cores idle at the end of the module's run.
 */
@Execution(ExecutionMode.CONCURRENT)
abstract class JdbcStoreDatabaseClockContract extends JdbcStoreContract {
    @Override
    boolean databaseClock() {
        return true;
    }

    @Override
    @Property(tries = 8)
    protected void randomDeliverySequences_keepEveryEffectExactlyOnce(@ForAll("deliverySequences") List<Step> steps) {
        super.randomDeliverySequences_keepEveryEffectExactlyOnce(steps);
    }
}
