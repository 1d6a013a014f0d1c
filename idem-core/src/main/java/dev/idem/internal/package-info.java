/** Not part of the API: may change without notice. */
@NullMarked
package dev.idem.internal;

import org.jspecify.annotations.NullMarked;
