/** What a store implements to plug into Idem: {@link dev.idem.spi.IdempotencyStore}. */
@NullMarked
package dev.idem.spi;

import org.jspecify.annotations.NullMarked;
