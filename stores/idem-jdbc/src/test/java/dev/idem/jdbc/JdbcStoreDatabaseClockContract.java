package dev.idem.jdbc;

import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;

/**
 * The store contract with {@code useDatabaseClock(true)}: the cases that move time run on the database's real time,
 * and the delivery sequences run fewer times, since each lease lapse sleeps.
 */
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
