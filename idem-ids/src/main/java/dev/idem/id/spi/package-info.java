/** What a node-id lease store implements: {@link dev.idem.id.spi.NodeIdLeaseStore}. */
@NullMarked
package dev.idem.id.spi;

import org.jspecify.annotations.NullMarked;
