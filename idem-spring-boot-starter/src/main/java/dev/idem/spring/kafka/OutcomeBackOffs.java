package dev.idem.spring.kafka;

import dev.idem.RetryPolicy;
import dev.idem.StoreUnavailableException;
import dev.idem.spring.IdempotentRetryLaterException;
import dev.idem.spring.InProgressException;
import java.time.Duration;
import java.util.function.BiFunction;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;
import org.springframework.transaction.CannotCreateTransactionException;
import org.springframework.util.backoff.BackOff;
import org.springframework.util.backoff.FixedBackOff;

/**
 * Chooses the back-off of a failed record from its exception: {@code IN_PROGRESS} waits the outcome's delay (or
 * {@code inProgressDelay}), capped at the policy's maximum delay, with no attempt bound, because the key is held or the
 * store is down and giving up would lose the message. A store that cannot be reached ({@link
 * StoreUnavailableException}, or a transaction of the inbox's database that cannot begin) is the same case. Everything
 * else follows the retry policy, never sooner than the outcome's delay.
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
            Duration delay = retry.retryAfter().orElse(inProgressDelay);
            return new FixedBackOff(
                    Math.min(delay.toMillis(), policy.maxDelay().toMillis()), FixedBackOff.UNLIMITED_ATTEMPTS);
        }
        if (retry == null
                && (Causes.find(exception, StoreUnavailableException.class) != null
                        || Causes.find(exception, CannotCreateTransactionException.class) != null)) {
            return new FixedBackOff(inProgressDelay.toMillis(), FixedBackOff.UNLIMITED_ATTEMPTS);
        }
        return new RetryPolicyBackOff(
                policy, retry == null ? Duration.ZERO : retry.retryAfter().orElse(Duration.ZERO));
    }
}
