package dev.idem.testkit;

import dev.idem.RetryPolicy;
import dev.idem.spi.DeliveryDecision;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;

/** The reference adapter on the in-memory broker passes the whole contract: the contract's scenarios can be met. */
@Execution(ExecutionMode.CONCURRENT) // each scenario has its own destination, consumers and ledger
class InMemoryAdapterContractTest extends InMemoryBrokerAdapter {

    @Override
    protected RunningConsumer startConsumer(ContractHandler handler, RetryPolicy retryPolicy) {
        return broker.consume(handler, InMemoryBroker.Settlement.by(DeliveryDecision.of(retryPolicy)));
    }
}
