package dev.idem.spring.kafka;

import dev.idem.RetryPolicy;
import dev.idem.spring.IdempotentRetryLaterException;
import dev.idem.spring.InProgressException;
import java.time.Duration;
import java.util.function.BiFunction;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;
import org.springframework.util.backoff.BackOff;
import org.springframework.util.backoff.FixedBackOff;

/**
 * Chooses the back-off of a failed record from its exception: {@code IN_PROGRESS} waits the outcome's delay (or
 * {@code inProgressDelay}) with no attempt bound, because the key is held or the store is down and giving up would
 * lose the message; everything else follows the retry policy, never sooner than the outcome's delay.
 */
final class OutcomeBackOffs implements BiFunction<ConsumerRecord<?, ?>, @Nullable Exception, @Nullable BackOff> {
    private final RetryPolicy policy;
    private final Duration inProgressDelay;

    OutcomeBackOffs(RetryPolicy policy, Duration inProgressDelay) {
        this.policy = policy;
        this.inProgressDelay = inProgressDelay;
    }

    @Override
    public BackOff apply(ConsumerRecord<?, ?> record, @Nullable Exception exception) {
        IdempotentRetryLaterException retry = Causes.find(exception, IdempotentRetryLaterException.class);
        if (retry instanceof InProgressException) {
            long delay = retry.retryAfter().orElse(inProgressDelay).toMillis();
            return new FixedBackOff(delay, FixedBackOff.UNLIMITED_ATTEMPTS);
        }
        return new RetryPolicyBackOff(
                policy, retry == null ? Duration.ZERO : retry.retryAfter().orElse(Duration.ZERO));
    }
}
