package dev.idem.spring.rocketmqapp;

import dev.idem.spring.app.OutcomeCounter;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Import;

/** A small payments service consuming RocketMQ: one {@code @RocketMQMessageListener} guarded by {@code @Idempotent}. */
@SpringBootApplication
@Import(OutcomeCounter.class)
public class RocketPaymentsTestApp {}
