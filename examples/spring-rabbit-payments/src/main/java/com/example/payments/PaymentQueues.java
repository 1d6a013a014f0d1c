package com.example.payments;

import dev.idem.rabbitmq.RabbitTopology;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Declares the four objects a guarded queue needs (the work queue with its dead-letter exchange, the retry queue, the
 * dead-letter exchange and queue) when the application starts, before the listener containers do. Declaring is
 * idempotent; a queue that exists with other arguments fails the start with {@code PRECONDITION_FAILED}.
 */
@Configuration
public class PaymentQueues {
    @Bean
    RabbitTopology paymentsTopology(RabbitTemplate rabbit, @Value("${payments.queue}") String queue) {
        RabbitTopology topology = RabbitTopology.forQueue(queue); // <queue>, .retry, .dlx, .dlq
        rabbit.execute(channel -> {
            topology.declare(channel);
            return null;
        });
        return topology;
    }
}
