package dev.idem;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class RetryPolicyTest {

    @Test
    void delays_doubleFromTheInitialDelay_upToTheCap() {
        RetryPolicy policy = RetryPolicy.builder()
                .initialDelay(Duration.ofMillis(100))
                .multiplier(2.0)
                .maxDelay(Duration.ofMillis(500))
                .maxAttempts(10)
                .jitter(0.0)
                .build();

        assertThat(policy.delayAfter(1)).isEqualTo(Duration.ofMillis(100));
        assertThat(policy.delayAfter(2)).isEqualTo(Duration.ofMillis(200));
        assertThat(policy.delayAfter(3)).isEqualTo(Duration.ofMillis(400));
        assertThat(policy.delayAfter(4)).isEqualTo(Duration.ofMillis(500));
        assertThat(policy.delayAfter(60)).isEqualTo(Duration.ofMillis(500));
    }

    @Test
    void jitter_staysWithinItsFraction_andUnderTheCap() {
        RetryPolicy policy = RetryPolicy.defaults();

        for (int i = 0; i < 1000; i++) {
            assertThat(policy.delayAfter(1)).isBetween(Duration.ofMillis(160), Duration.ofMillis(240));
            assertThat(policy.delayAfter(20)).isLessThanOrEqualTo(policy.maxDelay());
        }
    }

    @Test
    void exhausted_afterMaxAttempts() {
        RetryPolicy policy = RetryPolicy.defaults().toBuilder().maxAttempts(3).build();

        assertThat(policy.exhausted(2)).isFalse();
        assertThat(policy.exhausted(3)).isTrue();
    }

    @Test
    void toBuilder_keepsEveryOtherValue() {
        RetryPolicy policy = RetryPolicy.defaults().toBuilder().maxAttempts(3).build();

        assertThat(policy.toBuilder().build()).isEqualTo(policy);
        assertThat(policy.initialDelay()).isEqualTo(RetryPolicy.defaults().initialDelay());
        assertThat(policy.jitter()).isEqualTo(RetryPolicy.defaults().jitter());
    }

    @Test
    void invalidValues_areConfigurationErrors_namingTheSetting() {
        assertThatThrownBy(() -> RetryPolicy.builder().maxAttempts(0))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("maxAttempts");
        assertThatThrownBy(() -> RetryPolicy.builder().multiplier(0.5))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("multiplier");
        assertThatThrownBy(() ->
                        RetryPolicy.builder().maxDelay(Duration.ofMillis(1)).build())
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("maxDelay");
        assertThatThrownBy(() -> RetryPolicy.builder().jitter(1.0))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("jitter");
    }
}
