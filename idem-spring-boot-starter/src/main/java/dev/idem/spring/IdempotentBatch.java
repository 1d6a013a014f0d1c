package dev.idem.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs a batch method once per new element: the method takes one {@code List} (of {@code ConsumerRecord}s, payloads,
 * ...), returns {@code void}, and runs inside a Spring transaction of the application's {@code DataSource} (put
 * {@code @Transactional} on it).
 *
 * <ul>
 *   <li>{@link #key()} (and {@link #fingerprint()}) are evaluated per element, the element as {@code #element} (and
 *       the root object);
 *   <li>every element's mark is written in one go ({@code JdbcInbox.handleBatch}) on the transaction's own
 *       connection, and the method is called with the <em>new</em> elements only, in their order: duplicates (of
 *       earlier batches or of an earlier element of this one) are filtered out;
 *   <li>a rollback of the transaction rolls back every mark with the method's writes.
 * </ul>
 *
 * When the method throws, the inbox narrows the batch down (it calls the method again with halves of it, each call
 * rolled back to its savepoint) until the element that makes it throw is alone: every other element is applied, and
 * that one fails. Writes outside the database may therefore be made more than once; keep them out of batch methods.
 *
 * <p>When every element ends applied or a duplicate, the method returns. Otherwise the transaction <em>commits</em>
 * what was applied and then the call throws, naming the first element that was not applied: with spring-kafka a
 * {@code BatchListenerFailedException} with its index (so the stock {@code DefaultErrorHandler} commits the records
 * before it, and retries or dead-letters that one as a record listener's: {@link InProgressException}, {@link
 * NotYetAppliedException}, {@link IdempotentRejectedException} or the method's own exception is its cause); the
 * elements after it come again and are duplicates where they were applied.
 *
 * <pre>{@code
 * @KafkaListener(topics = "payments", batch = "true")
 * @Transactional
 * @IdempotentBatch(key = "#element.key()", fingerprint = "#element.value()")
 * public void onPayments(List<ConsumerRecord<String, String>> records) {   // only the new ones
 *     jdbcTemplate.batchUpdate(...);
 * }
 * }</pre>
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface IdempotentBatch {

    /** The key of one element: SpEL with the element as {@code #element}, e.g. {@code #element.key()}. */
    String key();

    /** Optional payload of one element to fingerprint (SpEL, like {@link #key()}), e.g. {@code #element.value()}. */
    String fingerprint() default "";

    /** The namespace (e.g. the consumer group); empty for the property {@code idem.namespace}. */
    String namespace() default "";
}
