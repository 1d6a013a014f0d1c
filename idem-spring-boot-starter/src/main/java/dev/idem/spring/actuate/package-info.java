/** Part of the Idem Spring Boot starter. */
@NullMarked
package dev.idem.spring.actuate;

import org.jspecify.annotations.NullMarked;
