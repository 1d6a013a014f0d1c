package dev.idem.rabbitmq;

import dev.idem.Delivery;
import dev.idem.jdbc.JdbcInbox;
import dev.idem.testsupport.DebitGuard;
import dev.idem.testsupport.PaymentBank;

/** The guards the duplicate-cause proofs run with, each a {@link DebitGuard} of idem-test-support. */
enum GuardKind {
    /** {@link DebitGuard#lease}: a second copy meets IN_PROGRESS. */
    LEASE,
    /** {@link DebitGuard#inTransaction} through a {@link JdbcInbox}: a second copy waits, then is DUPLICATE. */
    INBOX;

    DebitGuard open(PaymentBank bank, String namespace) {
        return switch (this) {
            case LEASE -> DebitGuard.lease(bank, namespace);
            case INBOX -> {
                JdbcInbox inbox = JdbcInbox.builder(bank.database().dataSource())
                        .namespace(namespace)
                        .createTableIfMissing(true)
                        .build();
                yield DebitGuard.inTransaction(bank, (key, work) -> inbox.handle(Delivery.of(key), work::run));
            }
        };
    }
}
