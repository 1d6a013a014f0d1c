package dev.idem.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class TwoStageOptionsTest {
    private static final Path HERE = Path.of("/work");

    @Test
    void wanted_onlyWithFlowTwoStage() {
        assertThat(TwoStageOptions.wanted(new String[] {"--flow", "two-stage"})).isTrue();
        assertThat(TwoStageOptions.wanted(new String[] {"--flow=two-stage"})).isTrue();
        assertThat(TwoStageOptions.wanted(new String[] {"--orders", "10"})).isFalse();
        assertThat(TwoStageOptions.wanted(new String[] {"--consumer-cmd", "x"})).isFalse();
    }

    @Test
    void defaults_bothStagesGuarded_crashesAndKillsOn() {
        TwoStageOptions o = TwoStageOptions.parse(new String[] {"--flow", "two-stage"}, HERE);

        assertThat(o.orders()).isEqualTo(600);
        assertThat(o.stageTwoGuarded()).isTrue();
        assertThat(o.crashAfterMax()).isEqualTo(40);
        assertThat(o.kills()).isTrue();
        assertThat(o.jdbcUrl()).isEmpty();
    }

    @Test
    void stageTwoGuardNone_runsShippingUnguarded() {
        assertThat(TwoStageOptions.parse(new String[] {"--flow", "two-stage", "--stage-two-guard", "none"}, HERE)
                        .stageTwoGuarded())
                .isFalse();
    }

    @Test
    void badValues_sayWhatToWrite() {
        assertThatThrownBy(() ->
                        TwoStageOptions.parse(new String[] {"--flow", "two-stage", "--stage-two-guard", "x"}, HERE))
                .hasMessageContaining("--stage-two-guard must be inbox or none");
        assertThatThrownBy(() ->
                        TwoStageOptions.parse(new String[] {"--flow", "two-stage", "--crash-after-max", "1"}, HERE))
                .hasMessageContaining("at least 2");
        assertThatThrownBy(() -> TwoStageOptions.parse(new String[] {"--flow", "two-stage", "--payments", "5"}, HERE))
                .hasMessageContaining("unknown option '--payments'");
    }
}
