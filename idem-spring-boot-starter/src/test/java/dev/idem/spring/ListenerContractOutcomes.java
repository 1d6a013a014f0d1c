package dev.idem.spring;

import dev.idem.DeadLetterException;
import dev.idem.Outcome;
import dev.idem.spi.KeyBytes;
import dev.idem.testkit.AdapterContract.ContractHandler;

/** What the contracts' {@code @Idempotent} listeners share: the handler's answer turned into what such a method throws. */
final class ListenerContractOutcomes {
    private ListenerContractOutcomes() {}

    /**
     * Runs {@code handler} on the message keyed by {@code key} (the header {@code keyHeader}'s bytes, null when it is
     * missing) and throws for its answer: nothing for an ack, {@link IdempotentRetryLaterException} for a retry,
     * {@link DeadLetterException} for a dead letter or a missing key.
     */
    static void handle(ContractHandler handler, String keyHeader, byte[] key, byte[] body) throws Exception {
        if (key == null) {
            throw new DeadLetterException("no idempotency key: header " + keyHeader + " is missing", null);
        }
        Outcome outcome = handler.handle(KeyBytes.exactKey(key), body);
        switch (outcome.action()) {
            case ACK -> {}
            case RETRY -> throw IdempotentRetryLaterException.of("contract", outcome);
            case DEAD_LETTER ->
                throw new DeadLetterException(outcome.reason(), outcome.cause().orElse(null));
        }
    }
}
