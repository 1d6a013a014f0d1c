package dev.idem.testkit;

import dev.idem.id.InMemoryNodeIdLeaseStore;
import dev.idem.id.spi.NodeIdLeaseStore;
import java.time.Clock;

class InMemoryNodeIdLeaseStoreContractTest extends NodeIdLeaseStoreContract {

    @Override
    protected NodeIdLeaseStore createStore(Clock clock) {
        return InMemoryNodeIdLeaseStore.builder().clock(clock).build();
    }

    @Override
    protected NodeIdLeaseStore createUnavailableStore(Clock clock) {
        InMemoryNodeIdLeaseStore closed =
                InMemoryNodeIdLeaseStore.builder().clock(clock).build();
        closed.close();
        return closed;
    }
}
