package dev.idem;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class RetryPolicyTest {

    @Test
    void delays_doubleFromTheInitialDelay_upToTheCap() {
        RetryPolicy policy = new RetryPolicy(Duration.ofMillis(100), 2.0, Duration.ofMillis(500), 10, 0.0);

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
        RetryPolicy policy = RetryPolicy.defaults().withMaxAttempts(3);

        assertThat(policy.exhausted(2)).isFalse();
        assertThat(policy.exhausted(3)).isTrue();
    }

    @Test
    void invalidValues_areConfigurationErrors_namingTheSetting() {
        assertThatThrownBy(() -> RetryPolicy.defaults().withMaxAttempts(0))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("maxAttempts");
        assertThatThrownBy(() -> RetryPolicy.defaults().withMultiplier(0.5))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("multiplier");
        assertThatThrownBy(() -> RetryPolicy.defaults().withMaxDelay(Duration.ofMillis(1)))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("maxDelay");
        assertThatThrownBy(() -> RetryPolicy.defaults().withJitter(1.0))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("jitter");
    }
}
