package dev.idem.outbox;

import java.time.Duration;

/**
 * The outbox's backlog, for metrics and health.
 *
 * @param unsent messages committed and not yet acknowledged by the broker (the relay's lag), parked ones included
 * @param parked messages the broker kept refusing, waiting for an operator ({@link OutboxRelay#unpark})
 * @param oldestUnsentAge the age of the oldest unsent message that is not parked; zero when there is none
 */
public record OutboxStats(long unsent, long parked, Duration oldestUnsentAge) {}
