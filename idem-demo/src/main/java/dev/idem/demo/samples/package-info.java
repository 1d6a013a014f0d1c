/**
 * Sample consumers of the consumer lab, each run as its own JVM by {@code --consumer-cmd}: three wrong in one known
 * way ({@link dev.idem.demo.samples.NoDedupConsumer}, {@link dev.idem.demo.samples.CommitFirstConsumer}, {@link
 * dev.idem.demo.samples.CheckThenActConsumer}) and one guarded by Idem's {@code JdbcInbox} ({@link
 * dev.idem.demo.samples.InboxConsumer}). They read the payment id from the {@code payment-id} header, the value
 * {@code <account>:<cents>}, and insert one row per applied payment into the lab's ledger ({@code idem_lab_ledger}).
 */
@NullMarked
package dev.idem.demo.samples;

import org.jspecify.annotations.NullMarked;
