package dev.idem.spring;

import dev.idem.Guard;
import dev.idem.jdbc.JdbcInbox;

/**
 * Adjusts the guards the starter builds for {@link Idempotent} methods, per namespace, after the {@code idem.*}
 * properties were applied. Declare any number of beans of this type.
 */
public interface IdemGuardCustomizer {

    /** Adjusts the inbox of {@code namespace} (calls inside a transaction). */
    default void customize(String namespace, JdbcInbox.Builder inbox) {}

    /** Adjusts the lease guard of {@code namespace} (calls outside a transaction). */
    default void customize(String namespace, Guard.Builder guard) {}
}
