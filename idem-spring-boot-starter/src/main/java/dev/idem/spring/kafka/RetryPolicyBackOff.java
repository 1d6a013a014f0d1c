package dev.idem.spring.kafka;

import dev.idem.RetryPolicy;
import java.time.Duration;
import org.springframework.util.backoff.BackOff;
import org.springframework.util.backoff.BackOffExecution;

/**
 * Idem's {@link RetryPolicy} as a Spring {@link BackOff}: the delay after the n-th failed delivery is {@link
 * RetryPolicy#delayAfter(int)}, but never less than {@code floor} (the delay the guard's outcome suggested), and the
 * execution stops once {@link RetryPolicy#exhausted(int)}.
 */
final class RetryPolicyBackOff implements BackOff {
    private final RetryPolicy policy;
    private final Duration floor;

    RetryPolicyBackOff(RetryPolicy policy, Duration floor) {
        this.policy = policy;
        this.floor = floor;
    }

    @Override
    public BackOffExecution start() {
        return new BackOffExecution() {
            private int failures;

            @Override
            public long nextBackOff() {
                failures++;
                if (policy.exhausted(failures)) {
                    return STOP;
                }
                Duration delay = policy.delayAfter(failures);
                return Math.max(delay.toMillis(), floor.toMillis());
            }
        };
    }
}
