/**
 * Idem: exactly-once effects on at-least-once messaging. Start with {@link dev.idem.Guard}.
 */
@NullMarked
package dev.idem;

import org.jspecify.annotations.NullMarked;
