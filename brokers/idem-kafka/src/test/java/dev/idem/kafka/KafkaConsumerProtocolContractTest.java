package dev.idem.kafka;

import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;

/** The {@link dev.idem.testkit.AdapterContract} on the KIP-848 group protocol ({@code group.protocol=consumer}). */
@Execution(ExecutionMode.CONCURRENT) // each scenario has its own destination, consumers and ledger
class KafkaConsumerProtocolContractTest extends KafkaAdapterContractTest {
    @Override
    String protocol() {
        return "consumer";
    }
}
