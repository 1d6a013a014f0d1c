package dev.idem.spring.rabbitapp;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/** A small payments service consuming RabbitMQ: one {@code @RabbitListener} guarded by {@code @Idempotent}. */
@SpringBootApplication
public class RabbitPaymentsTestApp {}
