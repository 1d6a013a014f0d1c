package dev.idem;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

class StateMachineTest {

    static final StateMachine ORDERS = StateMachine.builder()
            .states("PENDING", "PAID", "SHIPPED", "DELIVERED", "CANCELLED", "REFUNDED")
            .initial("PENDING")
            .transition("PAY", "PENDING", "PAID")
            .transition("SHIP", "PAID", "SHIPPED")
            .transition("DELIVER", "SHIPPED", "DELIVERED")
            .transition("CANCEL", "PENDING", "CANCELLED")
            .transition("REFUND", List.of("PAID", "SHIPPED"), "REFUNDED")
            .build();

    @Test
    void eventInItsTargetState_orLater_isDuplicate() {
        assertThat(ORDERS.classify("PAY", "PAID").type()).isEqualTo(Outcome.Type.DUPLICATE);
        assertThat(ORDERS.classify("PAY", "DELIVERED").type()).isEqualTo(Outcome.Type.DUPLICATE);
        assertThat(ORDERS.classify("PAY", "REFUNDED").type()).isEqualTo(Outcome.Type.DUPLICATE);
    }

    @Test
    void eventBeforeItsSourceState_isOutOfOrder() {
        assertThat(ORDERS.classify("SHIP", "PENDING").type()).isEqualTo(Outcome.Type.OUT_OF_ORDER);
        assertThat(ORDERS.classify("DELIVER", "PENDING").type()).isEqualTo(Outcome.Type.OUT_OF_ORDER);
    }

    @Test
    void eventForAMissingEntity_isOutOfOrder_cancelBeforeCreate() {
        Outcome outcome = ORDERS.classify("CANCEL", null);

        assertThat(outcome.type()).isEqualTo(Outcome.Type.OUT_OF_ORDER);
        assertThat(outcome.reason()).contains("before the entity exists");
    }

    @Test
    void eventOnAStateThatCanNeverReachIt_isRejected_namingBothStates() {
        Outcome outcome = ORDERS.classify("PAY", "CANCELLED");

        assertThat(outcome.type()).isEqualTo(Outcome.Type.REJECTED);
        assertThat(outcome.reason()).contains("PAY", "CANCELLED", "PENDING", "PAID");
    }

    @Test
    void eventWhoseSourceIsTheCurrentState_isOutOfOrder_becauseARaceMovedIt() {
        assertThat(ORDERS.classify("PAY", "PENDING").type()).isEqualTo(Outcome.Type.OUT_OF_ORDER);
    }

    @Test
    void unknownCurrentState_isRejected_withTheFix() {
        assertThat(ORDERS.classify("PAY", "ON_HOLD").reason()).contains("does not know", ".states(");
    }

    @Test
    void unknownEvent_isAConfigurationError() {
        assertThatThrownBy(() -> ORDERS.classify("TELEPORT", "PAID"))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("unknown event 'TELEPORT'");
    }

    @Test
    void undeclaredState_isRefused() {
        assertThatThrownBy(() -> StateMachine.builder()
                        .states("PENDING", "PAID")
                        .initial("PENDING")
                        .transition("PAY", "PENDING", "PAYED")
                        .build())
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("unknown states [PAYED]");
    }

    @Test
    void unreachableState_isRefused() {
        assertThatThrownBy(() -> StateMachine.builder()
                        .states("PENDING", "PAID", "LOST")
                        .initial("PENDING")
                        .transition("PAY", "PENDING", "PAID")
                        .build())
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("[LOST] cannot be reached");
    }

    @Test
    void eventWithTwoTargets_isRefusedAsAmbiguous() {
        assertThatThrownBy(() -> StateMachine.builder()
                        .states("PENDING", "PAID", "CANCELLED")
                        .initial("PENDING")
                        .transition("CLOSE", "PENDING", "CANCELLED")
                        .transition("CLOSE", "PAID", "PAID"))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("ambiguous");
    }

    @Test
    void cycle_isRefused_pointingToTheVersionGuard() {
        assertThatThrownBy(() -> StateMachine.builder()
                        .states("OPEN", "CLOSED")
                        .initial("OPEN")
                        .transition("CLOSE", "OPEN", "CLOSED")
                        .transition("REOPEN", "CLOSED", "OPEN")
                        .build())
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("cycle")
                .hasMessageContaining("version");
    }

    @Test
    void selfTransition_isRefused() {
        assertThatThrownBy(() -> StateMachine.builder().states("A").initial("A").transition("TOUCH", "A", "A"))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("to itself");
    }

    /**
     * A legal history (a path from the initial state) is delivered with every event 1–3 times, in random order,
     * with the creation among them; OUT_OF_ORDER deliveries are retried later. Nothing is rejected, no event
     * applies twice, and the entity ends where the last event of the history leads. Every event applies exactly
     * once unless an event with several sources overtook it (REFUND of a PAID order before its SHIP arrived: the
     * late SHIP is then a duplicate of a lifecycle that moved past it).
     */
    @Property(tries = 1000)
    void randomDeliveryOrder_ofALegalHistory_endsInItsFinalState(
            @ForAll("histories") List<String> history, @ForAll long seed) {
        Random random = new Random(seed);
        List<String> deliveries = new ArrayList<>();
        for (String event : history) {
            for (int copies = 1 + random.nextInt(3); copies > 0; copies--) {
                deliveries.add(event);
            }
        }
        for (int copies = 1 + random.nextInt(3); copies > 0; copies--) {
            deliveries.add("CREATE");
        }
        Collections.shuffle(deliveries, random);

        String[] state = {null};
        Map<String, Integer> applied = new HashMap<>();
        Deque<String> queue = new ArrayDeque<>(deliveries);
        for (int steps = 0; !queue.isEmpty(); steps++) {
            assertThat(steps).as("deliveries never settle").isLessThan(10_000);
            String event = queue.poll();
            Outcome outcome;
            if (event.equals("CREATE")) {
                outcome = state[0] == null ? Outcome.processed() : Outcome.duplicate("exists");
                state[0] = state[0] == null ? ORDERS.initial() : state[0];
            } else if (state[0] != null && ORDERS.sourcesOf(event).contains(state[0])) {
                state[0] = ORDERS.targetOf(event);
                outcome = Outcome.processed();
            } else {
                outcome = ORDERS.classify(event, state[0]);
            }
            assertThat(outcome.type()).as("%s in %s", event, state[0]).isNotEqualTo(Outcome.Type.REJECTED);
            if (outcome.type() == Outcome.Type.PROCESSED) {
                applied.merge(event, 1, Integer::sum);
            } else if (outcome.type() == Outcome.Type.OUT_OF_ORDER) {
                queue.add(event);
            }
        }
        String expected = history.isEmpty() ? ORDERS.initial() : ORDERS.targetOf(history.get(history.size() - 1));
        assertThat(state[0]).isEqualTo(expected);
        assertThat(applied)
                .containsEntry("CREATE", 1)
                .allSatisfy((e, n) -> assertThat(n).isEqualTo(1));
        if (!history.contains("REFUND")) {
            history.forEach(e -> assertThat(applied).containsEntry(e, 1));
        }
    }

    @Provide
    Arbitrary<List<String>> histories() {
        return Arbitraries.of(
                List.of(),
                List.of("PAY"),
                List.of("PAY", "SHIP"),
                List.of("PAY", "SHIP", "DELIVER"),
                List.of("PAY", "REFUND"),
                List.of("PAY", "SHIP", "REFUND"),
                List.of("CANCEL"));
    }
}
