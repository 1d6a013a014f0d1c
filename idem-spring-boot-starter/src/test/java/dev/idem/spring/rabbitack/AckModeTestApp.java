package dev.idem.spring.rabbitack;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * A service whose Rabbit listener container factory acks {@code MANUAL}: one {@code @Idempotent} listener that sets
 * its own {@code ackMode = "AUTO"}, one unguarded listener that acks by hand.
 */
@SpringBootApplication
public class AckModeTestApp {}
