/** What a broker publisher implements for the outbox relay. */
@NullMarked
package dev.idem.outbox.spi;

import org.jspecify.annotations.NullMarked;
