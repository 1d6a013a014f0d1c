/** spring-rabbit support: delayed retries and dead letters of {@code @Idempotent} {@code @RabbitListener}s. */
@NullMarked
package dev.idem.spring.rabbit;

import org.jspecify.annotations.NullMarked;
