/** Part of the Idem Spring Boot starter. */
@NullMarked
package dev.idem.spring.schema;

import org.jspecify.annotations.NullMarked;
