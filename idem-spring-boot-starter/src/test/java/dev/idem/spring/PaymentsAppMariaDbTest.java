package dev.idem.spring;

import dev.idem.testsupport.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

class PaymentsAppMariaDbTest extends PaymentsAppContract {
    static final TestDatabase DB = TestDatabase.mariadb("spring_app");

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        kafkaProperties(registry, DB.url());
    }

    @AfterAll
    static void drop() {
        DB.close();
    }
}
