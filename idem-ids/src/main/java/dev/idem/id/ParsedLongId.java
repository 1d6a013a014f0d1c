package dev.idem.id;

import java.time.Instant;

/** The parts of a 64-bit message id: when it was issued (to the millisecond), by which node, with which sequence. */
public record ParsedLongId(Instant timestamp, int nodeId, int sequence) {}
