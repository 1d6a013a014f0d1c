/**
 * The end-to-end harness: "debit account A by X for payment P" delivered at least once, with duplicates, racing
 * copies, handler failures and crashes, through every contender in one run, each checked after its run. Entry point
 * and command: {@link dev.idem.bench.e2e.EndToEnd}.
 */
@NullMarked
package dev.idem.bench.e2e;

import org.jspecify.annotations.NullMarked;
