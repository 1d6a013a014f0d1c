package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.support.descriptor.MethodSource;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Event;

/** The contract catches the drift the one decision was made against: an adapter with its own rule fails it. */
class AdapterContractCanFailTest {

    @Test
    void
            anAdapterThatCountsWaits_andTakesEveryExceptionForItsHandlersFailure_failsTheOutage_inProgress_andPoisonScenarios() {
        List<Event> finished = EngineTestKit.engine("junit-jupiter")
                .selectors(selectClass(DriftedAdapter.class))
                .configurationParameter("junit.jupiter.execution.parallel.enabled", "true")
                .configurationParameter("junit.jupiter.execution.parallel.config.strategy", "fixed")
                .configurationParameter("junit.jupiter.execution.parallel.config.fixed.parallelism", "3")
                .execute()
                .testEvents()
                .finished()
                .list();

        List<String> failed = finished.stream()
                .filter(e -> e.getPayload(TestExecutionResult.class)
                        .map(r -> r.getStatus() != TestExecutionResult.Status.SUCCESSFUL)
                        .orElse(false))
                .map(e -> ((MethodSource) e.getTestDescriptor().getSource().orElseThrow()).getMethodName())
                .toList();
        assertThat(finished).hasSize(14);
        assertThat(failed)
                .containsExactlyInAnyOrder(
                        "inProgress_farBeyondTheAttemptBound_isNeverDeadLettered",
                        "databaseUnreachable_underTraffic_nothingDeadLettered_everyMessageAppliedOnceAfterwards",
                        "databaseEndingEverySessionMidMethod_nothingDeadLettered_everyMessageAppliedOnceAfterwards",
                        "poison_andAMessageWithoutKey_areDeadLetteredOnce_atOnce_withTheirReasons");
    }
}
