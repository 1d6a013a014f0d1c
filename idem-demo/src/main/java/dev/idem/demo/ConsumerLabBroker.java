package dev.idem.demo;

import java.util.List;
import java.util.Map;

/**
 * The broker of a consumer lab: the lab creates the topic (stream, subject, group) the user's consumer reads, sends
 * the payment stream into it, and asks the broker when the consumers have taken everything.
 */
interface ConsumerLabBroker extends AutoCloseable {

    /** {@code kafka}, {@code nats}. */
    String id();

    /** Creates the topic (stream, consumer group) of this run; unique names. */
    void prepare() throws Exception;

    /** The placeholders the consumer command may use ({@code bootstrap → 127.0.0.1:9092}, ...), without braces. */
    Map<String, String> placeholders();

    /** What the run uses, for the report. */
    List<LabResult.Entry> environment();

    /** True once the consumers of {@code processes} processes have joined (a hint: the lab waits for it, bounded). */
    boolean consumersReady(int processes) throws Exception;

    /** Sends one copy of a payment. */
    void send(PaymentWorkload.Send send) throws Exception;

    /** Waits until every copy sent is stored by the broker. */
    void flush() throws Exception;

    /** Copies the consumers have not acknowledged yet (committed offsets, pending and unacked messages). */
    long backlog() throws Exception;

    @Override
    void close();

    /** The message header that carries the payment id on every broker (the Kafka record key carries it too). */
    String PAYMENT_ID_HEADER = "payment-id";
}
