package dev.idem.spring;

import dev.idem.testsupport.ReadmeSnippets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** docs/spring-boot.md shows the test application's listeners exactly as PaymentsAppContract runs them. */
class SpringBootDocsTest {
    private static final Path SOURCE = Path.of("src/test/java/dev/idem/spring/app/PaymentListener.java");

    @Test
    void theListenersOfTheDocs_areTheOnesTheApplicationTestsRun() {
        ReadmeSnippets.assertShown(SOURCE, "spring-record-listener");
        ReadmeSnippets.assertShown(SOURCE, "spring-batch-listener");
        ReadmeSnippets.assertShown(SOURCE, "spring-transactional-batch-listener");
        ReadmeSnippets.assertShown(
                Path.of("src/test/java/dev/idem/spring/rabbitapp/RabbitPaymentListener.java"),
                "spring-rabbit-listener");
        ReadmeSnippets.assertShown(
                Path.of("src/test/java/dev/idem/spring/rocketmqapp/RocketPaymentListener.java"),
                "spring-rocketmq-listener");
    }
}
