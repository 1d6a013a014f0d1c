/** Part of the Idem Spring Boot starter. */
@NullMarked
package dev.idem.spring.kafka;

import org.jspecify.annotations.NullMarked;
