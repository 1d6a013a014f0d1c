package dev.idem.spring.app;

import dev.idem.spring.Idempotent;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.stereotype.Component;

/** Sends a receipt outside any transaction: guarded by the lease store. */
@Component
public class Notifier {
    private final AtomicInteger sent = new AtomicInteger();

    @Idempotent(namespace = "receipts", key = "#paymentId")
    public String sendReceipt(String paymentId) {
        return "receipt-" + sent.incrementAndGet() + "-for-" + paymentId;
    }

    public int sent() {
        return sent.get();
    }
}
