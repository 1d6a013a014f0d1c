/**
 * Message ids a producer fixes before the first send: {@link dev.idem.id.MessageIdGenerator} issues them as a 64-bit
 * long or as a readable string, {@link dev.idem.id.MessageIdFormat} parses both back.
 */
@NullMarked
package dev.idem.id;

import org.jspecify.annotations.NullMarked;
