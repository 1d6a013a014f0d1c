package dev.idem.rocketmq;

import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;

/** The {@link dev.idem.testkit.AdapterContract} on the orderly listener ({@code MessageListenerOrderly}). */
@Execution(ExecutionMode.CONCURRENT) // each scenario has its own destination, consumers and ledger
class RocketMQOrderlyContractTest extends RocketMQAdapterContractTest {
    @Override
    boolean orderly() {
        return true;
    }
}
