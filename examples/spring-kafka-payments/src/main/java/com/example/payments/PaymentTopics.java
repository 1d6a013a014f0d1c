package com.example.payments;

import org.apache.kafka.clients.admin.NewTopic;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.kafka.config.TopicBuilder;

/**
 * The payments topic and its dead-letter topic, created at start-up by Spring Boot's {@code KafkaAdmin} when missing.
 * Idem's dead-letter recoverer writes a record to the same partition of {@code <topic>-dlt}: that topic needs at
 * least as many partitions as the source topic.
 */
@Configuration
public class PaymentTopics {
    private static final int PARTITIONS = 3;

    @Bean
    NewTopic payments(@Value("${payments.topic}") String topic) {
        return TopicBuilder.name(topic).partitions(PARTITIONS).build();
    }

    @Bean
    NewTopic paymentDeadLetters(@Value("${payments.topic}") String topic) {
        return TopicBuilder.name(topic + "-dlt").partitions(PARTITIONS).build();
    }
}
