package dev.idem.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs the annotated method once per idempotency key.
 *
 * <ul>
 *   <li>Inside a Spring-managed transaction that holds a connection of the application's {@code DataSource}
 *       ({@code @Transactional}, {@code TransactionTemplate}), the key's mark is written on that transaction's own
 *       connection ({@code JdbcInbox}): it commits or rolls back with the method's {@code JdbcTemplate}/JPA writes.
 *   <li>Outside any transaction, the lease store (Redis when configured, else the database) guards the call.
 *   <li>Inside a transaction that holds no connection of the inbox's data source (another data source, a Kafka
 *       transaction) the call is refused with a {@link dev.idem.ConfigurationException}: the lease would record the
 *       message as applied before that transaction commits.
 * </ul>
 *
 * The guard is Spring's proxy: a call from the bean to itself ({@code this.pay(...)}) bypasses it and runs unguarded,
 * and a private, static or final method cannot be guarded at all (the startup fails on one).
 *
 * A duplicate skips the method and returns the stored result (methods returning {@code void}, {@code String} or
 * {@code byte[]}, or any type a {@link ResultCodec} bean handles). An outcome that must be retried throws {@link
 * InProgressException} or {@link NotYetAppliedException} (both {@link IdempotentRetryLaterException}, carrying the
 * outcome's delay); {@code REJECTED} throws {@link IdempotentRejectedException} with the reason. An exception of the
 * method itself propagates unchanged, after the mark was removed.
 *
 * <pre>{@code
 * @KafkaListener(topics = "payments")
 * @Transactional
 * @Idempotent(key = "#record.key()", fingerprint = "#record.value()")
 * public void pay(ConsumerRecord<String, String> record) {
 *     jdbcTemplate.update("UPDATE account SET balance = balance - ? WHERE id = ?", ...);
 * }
 * }</pre>
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface Idempotent {

    /**
     * The key: a SpEL expression over the method's arguments ({@code #name}, or {@code #p0}/{@code #a0} by
     * position), e.g. {@code #record.key()}, {@code #payment.id + ':PAY'}, {@code
     * #record.headers().lastHeader('message-id').value()} (a {@code byte[]} is read as UTF-8). Must not be null.
     */
    String key();

    /**
     * Optional payload to fingerprint (SpEL, like {@link #key()}): a {@code String} or {@code byte[]} whose SHA-256
     * is stored with the key, so that the same key with another payload is {@code REJECTED}. Empty for none.
     */
    String fingerprint() default "";

    /** The namespace (e.g. the consumer group); empty for the property {@code idem.namespace}. */
    String namespace() default "";
}
