package dev.idem.jdbc;

import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;

class H2StoreContractTest extends JdbcStoreContract {
    @Override
    Dialect dialect() {
        return Dialect.H2;
    }

    /** In memory, the contract's 1000 random sequences take a second or two. */
    @Override
    @Property(tries = 1000)
    protected void randomDeliverySequences_keepEveryEffectExactlyOnce(@ForAll("deliverySequences") List<Step> steps) {
        super.randomDeliverySequences_keepEveryEffectExactlyOnce(steps);
    }
}
