package dev.idem.spring.app;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/** A small payments service: a record listener, a batch listener, a lease-guarded notifier. */
@SpringBootApplication
public class PaymentsTestApp {}
