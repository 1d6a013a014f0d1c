package com.example.payments;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * A payments service that charges each payment once, however often Kafka delivers it. Run PostgreSQL and Kafka
 * (see application.properties), then {@code ./mvnw spring-boot:run}.
 */
@SpringBootApplication
public class PaymentsApplication {
    public static void main(String[] args) {
        SpringApplication.run(PaymentsApplication.class, args);
    }
}
