package dev.idem.testkit;

import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import dev.idem.spi.Attempts;
import dev.idem.spi.DeliveryDecision;
import dev.idem.spi.Verdict;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;

/**
 * An adapter written with its own rule, as the adapters were before the one decision: every retry outcome counts
 * toward the bound, and whatever the handler throws is its failure. Run by {@link AdapterContractCanFailTest} only.
 */
@Execution(ExecutionMode.CONCURRENT)
class DriftedAdapter extends InMemoryBrokerAdapter {

    @Override
    protected RunningConsumer startConsumer(ContractHandler handler, RetryPolicy retryPolicy) {
        DeliveryDecision decision = DeliveryDecision.of(retryPolicy);
        return broker.consume(handler, new InMemoryBroker.Settlement() {
            @Override
            public Verdict of(Outcome outcome, Attempts attempts) {
                Outcome counted =
                        outcome.type() == Outcome.Type.IN_PROGRESS ? Outcome.failed(outcome.reason(), null) : outcome;
                return decision.decide(counted, attempts);
            }

            @Override
            public Verdict of(Exception thrown, Attempts attempts) {
                return decision.decide(Outcome.failed("handler threw " + thrown, null), attempts);
            }
        });
    }
}
