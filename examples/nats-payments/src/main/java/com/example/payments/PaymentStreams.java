package com.example.payments;

import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.api.AckPolicy;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.StreamConfiguration;
import java.io.IOException;
import java.time.Duration;

/** The payments stream, its dead-letter stream and the durable pull consumer, created or updated to these settings. */
public final class PaymentStreams {
    private PaymentStreams() {}

    /**
     * Creates stream {@code stream} on {@code subject}, stream {@code <stream>_DLQ} on {@code deadLetters} and the
     * durable pull consumer {@code durable} with explicit acks (updating them when they exist).
     */
    public static void create(JetStreamManagement jsm, String stream, String subject, String deadLetters, String durable)
            throws IOException, JetStreamApiException {
        addOrUpdate(jsm, StreamConfiguration.builder().name(stream).subjects(subject).build());
        addOrUpdate(jsm, StreamConfiguration.builder().name(stream + "_DLQ").subjects(deadLetters).build());
        jsm.addOrUpdateConsumer(
                stream,
                ConsumerConfiguration.builder()
                        .durable(durable)
                        .ackPolicy(AckPolicy.Explicit) // required: the consumer acks each message itself
                        .ackWait(Duration.ofSeconds(30))
                        .build());
    }

    private static void addOrUpdate(JetStreamManagement jsm, StreamConfiguration config)
            throws IOException, JetStreamApiException {
        if (jsm.getStreamNames().contains(config.getName())) {
            jsm.updateStream(config);
        } else {
            jsm.addStream(config);
        }
    }
}
