/**
 * The double-charge lab: a payment flow over a real Kafka broker into a real database, every duplicate cause
 * injected, consumed once without a guard and once per Idem guard, the damage counted with SQL. Run {@link
 * dev.idem.demo.Main}.
 */
@NullMarked
package dev.idem.demo;

import org.jspecify.annotations.NullMarked;
