/**
 * Idem for Spring Boot: {@link dev.idem.spring.Idempotent}, its exceptions, the {@code idem.*} properties and the
 * auto-configuration.
 */
@NullMarked
package dev.idem.spring;

import org.jspecify.annotations.NullMarked;
