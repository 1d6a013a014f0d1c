/** Shared by the starter's integrations; not part of the API. */
@NullMarked
package dev.idem.spring.internal;

import org.jspecify.annotations.NullMarked;
