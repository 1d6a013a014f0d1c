package dev.idem.testkit;

import dev.idem.InMemoryStore;
import dev.idem.spi.IdempotencyStore;
import java.time.Clock;

class InMemoryStoreContractTest extends IdempotencyStoreContract {

    @Override
    protected IdempotencyStore createStore(Clock clock) {
        return InMemoryStore.builder().clock(clock).build();
    }

    @Override
    protected IdempotencyStore createUnavailableStore(Clock clock) {
        InMemoryStore closed = InMemoryStore.builder().clock(clock).build();
        closed.close();
        return closed;
    }
}
