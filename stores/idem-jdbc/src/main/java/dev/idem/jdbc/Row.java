package dev.idem.jdbc;

import org.jspecify.annotations.Nullable;

/** One row of the idempotency table, as read. Times are epoch milliseconds. */
record Row(
        String state,
        String owner,
        long fencingToken,
        long expiresAt,
        @Nullable Long completedAt,
        @Nullable String fingerprint,
        byte @Nullable [] result) {

    boolean done() {
        return Sql.DONE.equals(state);
    }

    boolean live(long now) {
        return now < expiresAt;
    }
}
