package dev.idem.id;

import java.time.Instant;

/** The parts of a readable message id such as {@code ORDER_20240115143000123_NODE01_0001}. */
public record ParsedStringId(String prefix, Instant timestamp, int nodeId, int sequence) {}
