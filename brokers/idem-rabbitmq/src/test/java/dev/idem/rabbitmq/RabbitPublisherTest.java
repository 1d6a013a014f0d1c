package dev.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.GetResponse;
import dev.idem.RetryLaterException;
import dev.idem.testsupport.TestServers;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The publisher fixes the message id once and counts only confirmed, routed publishes. */
class RabbitPublisherTest {
    private static final byte[] BODY = "x".getBytes(StandardCharsets.UTF_8);

    @Test
    void publish_setsMessageIdAndPersistence_keepsTheOtherProperties() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("publisher");
                RabbitPublisher publisher =
                        RabbitPublisher.builder(RabbitFixture.factory(0)).build()) {
            AMQP.BasicProperties props =
                    new AMQP.BasicProperties.Builder().contentType("text/plain").build();
            publisher.publish("", queues.queue(), "10086:PAY", props, BODY);
            GetResponse got = queues.drain(queues.queue()).get(0);
            assertThat(got.getProps().getMessageId()).isEqualTo("10086:PAY");
            assertThat(got.getProps().getDeliveryMode()).isEqualTo(2);
            assertThat(got.getProps().getContentType()).isEqualTo("text/plain");
        }
    }

    @Test
    void publish_unroutable_isNotRetried_andSaysItWasNotStored() {
        try (RabbitPublisher publisher =
                RabbitPublisher.builder(RabbitFixture.factory(0)).build()) {
            String noSuchQueue = TestServers.uniquePrefix("nosuchqueue");
            assertThatThrownBy(() -> publisher.publish("", noSuchQueue, "pay-1", BODY))
                    .isInstanceOf(RetryLaterException.class)
                    .hasMessageContaining("not stored")
                    .hasMessageContaining("unroutable");
        }
    }

    @Test
    void publish_propertiesWithAnotherMessageId_orBlankId_refused() {
        AMQP.BasicProperties other =
                new AMQP.BasicProperties.Builder().messageId("other").build();
        assertThatThrownBy(() -> RabbitPublisher.stamp(other, "pay-1"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("already carry message id 'other'");
        assertThatThrownBy(() -> RabbitPublisher.stamp(other, " "))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("must not be blank");
        assertThat(RabbitPublisher.stamp(other, "other").getMessageId()).isEqualTo("other");
    }
}
