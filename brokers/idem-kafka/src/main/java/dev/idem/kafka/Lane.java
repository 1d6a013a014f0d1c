package dev.idem.kafka;

import java.util.ArrayDeque;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;

/**
 * A queue of records handled in order, one task at a time: a whole partition ({@link Ordering#PARTITION}) or one key
 * of a partition ({@link Ordering#KEY}). The poll thread appends to the mailbox and schedules the lane when it is
 * idle; the lane's task drains it on a worker and goes on while records keep coming, so a busy lane never waits for
 * the poll thread.
 */
final class Lane<K, V> {
    final PartitionWork<K, V> partition;
    final @Nullable String key;
    final ConcurrentLinkedQueue<Pending<K, V>> mailbox = new ConcurrentLinkedQueue<>();
    /** Taken out of the mailbox but to be handled again first (retries), in order. The running task's only. */
    final ArrayDeque<Pending<K, V>> carry = new ArrayDeque<>();
    /** A task runs, is queued, or waits for a retry: the poll thread must not schedule another one. */
    final AtomicBoolean scheduled = new AtomicBoolean();

    private final Object callLock = new Object();
    private @Nullable Thread callThread;
    private long callOffset = -1;
    private long callStartNanos;
    private boolean callInterrupted;

    Lane(PartitionWork<K, V> partition, @Nullable String key) {
        this.partition = partition;
        this.key = key;
    }

    /** The worker enters the handler for the record at {@code offset}. */
    void enterHandler(long offset, long nowNanos) {
        if (partition.watched != null) {
            partition.watched.add(this);
        }
        synchronized (callLock) {
            callThread = Thread.currentThread();
            callOffset = offset;
            callStartNanos = nowNanos;
            callInterrupted = false;
        }
    }

    /** The handler returned: an interrupt aimed at it must not hit the next record. */
    void exitHandler() {
        synchronized (callLock) {
            callThread = null;
            callOffset = -1;
            Thread.interrupted();
        }
        if (partition.watched != null) {
            partition.watched.remove(this);
        }
    }

    /**
     * Interrupts the handler when it has run longer than {@code timeoutNanos}.
     *
     * @return the offset of the record whose handler was interrupted now, or -1
     */
    long interruptIfOverdue(long nowNanos, long timeoutNanos) {
        synchronized (callLock) {
            if (callThread == null || callInterrupted || nowNanos - callStartNanos < timeoutNanos) {
                return -1;
            }
            callInterrupted = true;
            callThread.interrupt();
            return callOffset;
        }
    }

    /** How long the handler in hand has run, in nanoseconds, and for which record; null when none runs. */
    long @Nullable [] handlerCall(long nowNanos) {
        synchronized (callLock) {
            return callThread == null ? null : new long[] {callOffset, nowNanos - callStartNanos};
        }
    }
}
