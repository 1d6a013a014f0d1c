package dev.idem.spi;

/** The answer to an owner-checked change ({@code complete}, {@code release}, {@code extend}). */
public enum UpdateResult {
    /** The caller owned the live claim; the change was made. */
    APPLIED,
    /** Someone else owns the key now (the caller's lease expired and was taken over, or it is done); unchanged. */
    NOT_OWNER,
    /** There is no live claim for the key (released, expired and purged, or never claimed); unchanged. */
    NOT_FOUND
}
