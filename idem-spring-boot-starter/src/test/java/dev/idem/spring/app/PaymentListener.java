package dev.idem.spring.app;

import dev.idem.spring.Idempotent;
import dev.idem.spring.IdempotentBatch;
import dev.idem.spring.kafka.IdempotentBatches;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

/**
 * The listeners: payments one record at a time (three consumers), in batches record by record, and in batches in one
 * transaction.
 */
@Component
public class PaymentListener {
    private final Ledger ledger;

    public PaymentListener(Ledger ledger) {
        this.ledger = ledger;
    }

    // readme:spring-record-listener begin
    @KafkaListener(topics = "${payments.topic}", concurrency = "3")
    @Transactional
    @Idempotent(namespace = "payments", key = "#record.key()", fingerprint = "#record.value()")
    public void onPayment(ConsumerRecord<String, String> record) {
        ledger.apply(record);
    }
    // readme:spring-record-listener end

    // readme:spring-batch-listener begin
    @KafkaListener(
            topics = "${payments.batch-topic}",
            batch = "true",
            groupId = "${spring.kafka.consumer.group-id}-batch")
    public void onPayments(List<ConsumerRecord<String, String>> records) {
        IdempotentBatches.forEach(records, ledger::applyFromBatch);
    }
    // readme:spring-batch-listener end

    // readme:spring-transactional-batch-listener begin
    @KafkaListener(
            topics = "${payments.batch-tx-topic}",
            batch = "true",
            groupId = "${spring.kafka.consumer.group-id}-batch-tx")
    @Transactional
    @IdempotentBatch(namespace = "batch-tx-payments", key = "#element.key()", fingerprint = "#element.value()")
    public void onPaymentBatch(List<ConsumerRecord<String, String>> records) { // the new records only
        ledger.applyAll(records);
    }
    // readme:spring-transactional-batch-listener end
}
