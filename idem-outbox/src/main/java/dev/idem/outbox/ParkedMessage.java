package dev.idem.outbox;

import java.time.Instant;

/**
 * A message the broker kept refusing: not published until {@link OutboxRelay#unpark}ed; its key's later messages wait
 * behind it (their order is kept), other keys go on.
 */
public record ParkedMessage(
        String messageId, String destination, String key, Instant parkedAt, int refusals, String reason) {}
