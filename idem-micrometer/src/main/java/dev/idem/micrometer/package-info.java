/** Micrometer meters from Idem's events: {@link dev.idem.micrometer.MicrometerListener}. */
@NullMarked
package dev.idem.micrometer;

import org.jspecify.annotations.NullMarked;
