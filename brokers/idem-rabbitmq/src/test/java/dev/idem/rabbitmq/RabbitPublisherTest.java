package dev.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.GetResponse;
import dev.idem.RetryLaterException;
import dev.idem.RetryPolicy;
import dev.idem.testkit.TcpProxy;
import dev.idem.testsupport.TestServers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
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

    /**
     * The broker stored the message but its confirm was lost (the proxy swallows the broker's answers): the publisher
     * publishes it again on a new connection, with the same message id, and the queue holds it twice. What the guarded
     * consumer makes of the two copies is AdapterContract's producer-resend case.
     */
    @Test
    void lostConfirm_publishedAgainOnANewConnection_theQueueHoldsTwoCopiesWithOneMessageId() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("lostconfirm");
                TcpProxy proxy = TcpProxy.start(
                        RabbitFixture.uri().getHost(), RabbitFixture.uri().getPort());
                RabbitPublisher publisher = RabbitPublisher.builder(RabbitFixture.factory(proxy.port()))
                        .confirmTimeout(Duration.ofSeconds(1))
                        .retryPolicy(RetryPolicy.builder()
                                .initialDelay(Duration.ofMillis(50))
                                .maxAttempts(2)
                                .build())
                        .build()) {
            publisher.publish("", queues.queue(), "warm-up", BODY);
            queues.drain(queues.queue());
            proxy.blackholeExisting();
            publisher.publish("", queues.queue(), "pay-1", BODY);
            List<GetResponse> copies = queues.drain(queues.queue());
            assertThat(copies).hasSize(2);
            assertThat(copies)
                    .allSatisfy(c -> assertThat(c.getProps().getMessageId()).isEqualTo("pay-1"));
        }
    }

    /**
     * A message id longer than AMQP's 255-byte short string is refused before anything is published, naming the fix;
     * the next publish is confirmed at once. (The client counted the refused publish for confirms before failing to
     * encode it, so the next publish waited for a confirm that never comes: not confirmed, connection aborted.)
     */
    @Test
    void messageIdLongerThanAShortString_refusedNamingTheFix_theNextPublishIsConfirmed() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("longid");
                RabbitPublisher publisher = RabbitPublisher.builder(RabbitFixture.factory(0))
                        .confirmTimeout(Duration.ofSeconds(2))
                        .retryPolicy(RetryPolicy.builder().maxAttempts(1).build())
                        .build()) {
            publisher.publish("", queues.queue(), "warm-up", BODY);
            String longId = "\u00e9".repeat(128); // 128 characters, 256 bytes of UTF-8
            assertThatThrownBy(() -> publisher.publish("", queues.queue(), longId, BODY))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("255")
                    .hasMessageContaining("KeyExtractor.header");
            publisher.publish("", queues.queue(), "pay-1", BODY);
            assertThat(queues.drain(queues.queue()))
                    .extracting(g -> g.getProps().getMessageId())
                    .containsExactly("warm-up", "pay-1");
        }
    }

    /** Properties the client cannot encode (a header of a type AMQP has not) leave the next publish unharmed. */
    @Test
    void headerTheClientCannotEncode_refused_theNextPublishIsConfirmed() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("badheader");
                RabbitPublisher publisher = RabbitPublisher.builder(RabbitFixture.factory(0))
                        .confirmTimeout(Duration.ofSeconds(2))
                        .retryPolicy(RetryPolicy.builder().maxAttempts(1).build())
                        .build()) {
            AMQP.BasicProperties unencodable = new AMQP.BasicProperties.Builder()
                    .headers(java.util.Map.of("order", java.util.UUID.randomUUID()))
                    .build();
            assertThatThrownBy(() -> publisher.publish("", queues.queue(), "pay-0", unencodable, BODY))
                    .isInstanceOf(IllegalArgumentException.class);
            publisher.publish("", queues.queue(), "pay-1", BODY);
            assertThat(queues.drain(queues.queue()))
                    .extracting(g -> g.getProps().getMessageId())
                    .containsExactly("pay-1");
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
