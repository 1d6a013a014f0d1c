package dev.idem.kafka;

import java.util.ArrayDeque;

/**
 * Which records of one partition are finished, record by record, so that the commit position is always the first
 * record that is not: records are {@link #track tracked} by the poll thread in offset order and {@link #finish
 * finished} by workers in any order (per-key lanes finish out of order). Thread-safe.
 */
final class PartitionProgress {

    /** One tracked record; {@link #finish} takes it back. */
    static final class Slot {
        final long offset;
        boolean finished;

        private Slot(long offset) {
            this.offset = offset;
        }
    }

    private final ArrayDeque<Slot> unfinished = new ArrayDeque<>();
    private long next = -1;
    /** The first offset tracked: where the partition started, nothing to commit. */
    private long start = -1;

    private long committed = -1;

    /** Called by the poll thread for each record handed out, in offset order. */
    synchronized Slot track(long offset) {
        Slot slot = new Slot(offset);
        if (start < 0) {
            start = offset;
            committed = offset;
        }
        unfinished.addLast(slot);
        if (unfinished.size() == 1) {
            next = offset;
        }
        return slot;
    }

    /** The record is final (handled, duplicate or dead-lettered). */
    synchronized void finish(Slot slot) {
        slot.finished = true;
        while (!unfinished.isEmpty() && unfinished.peekFirst().finished) {
            next = unfinished.pollFirst().offset + 1;
        }
        if (!unfinished.isEmpty()) {
            next = unfinished.peekFirst().offset;
        }
    }

    /**
     * The offset to commit now (the first record not finished, or one past the last record when all are), or -1 when
     * nothing new is finished since the last {@link #committed(long)}.
     */
    synchronized long toCommit() {
        return next > committed ? next : -1;
    }

    /**
     * The offset to commit when the partition is given up (revoked, closed), committed before or not; -1 when no record
     * was finished since the partition was assigned.
     */
    synchronized long position() {
        return next > start ? next : -1;
    }

    /** The broker acknowledged (or was sent) a commit of {@code offset}. */
    synchronized void committed(long offset) {
        committed = Math.max(committed, offset);
    }

    /** A commit of {@code offset} failed: commit it again next time. */
    synchronized void commitFailed(long offset) {
        if (committed == offset) {
            committed = offset - 1;
        }
    }

    /** Records handed out and not yet final. */
    synchronized int unfinishedCount() {
        return unfinished.size();
    }
}
