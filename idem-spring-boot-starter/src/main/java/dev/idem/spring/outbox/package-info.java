/**
 * The outbox in Spring: {@link dev.idem.spring.outbox.SpringOutbox} joins the {@code @Transactional} method's
 * transaction, the relay runs with the context, the table comes with the migrations, and the backlog shows in metrics
 * and health.
 */
@NullMarked
package dev.idem.spring.outbox;

import org.jspecify.annotations.NullMarked;
