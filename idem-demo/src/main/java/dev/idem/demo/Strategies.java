package dev.idem.demo;

import dev.idem.Guard;
import dev.idem.InMemoryStore;
import dev.idem.Outcome;
import dev.idem.StateMachine;
import dev.idem.jdbc.Assignments;
import dev.idem.jdbc.JdbcInbox;
import dev.idem.jdbc.StateMachineGuard;
import dev.idem.jdbc.TransactionalHandler;
import dev.idem.jdbc.UniqueRowGuard;
import dev.idem.jdbc.VersionGuard;
import dev.idem.spi.IdempotencyStore;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;

/** The strategies the lab compares. */
final class Strategies {
    private Strategies() {}

    static final StateMachine ORDER_LIFECYCLE = StateMachine.builder()
            .states("PENDING", "PAID", "SHIPPED", "CANCELLED")
            .initial("PENDING")
            .transition("PAY", "PENDING", "PAID")
            .transition("SHIP", "PAID", "SHIPPED")
            .transition("CANCEL", "PENDING", "CANCELLED")
            .build();

    /** No guard: the effect runs for every delivery. The baseline that shows the damage. */
    static Strategy none(LabDatabase db) {
        return new Base("none", "no guard: the handler runs for every delivery", false, db) {
            @Override
            public Outcome handle(Delivery d) {
                return db.inTransaction(c -> {
                    d.insideEffect();
                    return book.apply(c, d.event());
                });
            }
        };
    }

    /**
     * The transactional dedup record ({@link JdbcInbox}): a row keyed by the message key inserted in the same
     * transaction as the effect. A duplicate finds the row (or waits on the first copy's uncommitted one) and changes
     * nothing; a rollback removes row and effect together.
     */
    static Strategy inbox(LabDatabase db) throws SQLException {
        String id = "inbox";
        String table = "lab_" + id + "_keys";
        db.dropTable(table);
        JdbcInbox inbox = JdbcInbox.builder(db.dataSource())
                .namespace("idem-lab-" + id)
                .table(table)
                .createTableIfMissing(true)
                .build();
        return new Base(id, "transactional dedup record (JdbcInbox, table " + table + ")", true, db) {
            @Override
            public Outcome handle(Delivery d) {
                return inbox.handle(dev.idem.Delivery.of(d.event().key()), connection -> {
                    d.insideEffect();
                    return book.apply(connection, d.event());
                });
            }
        };
    }

    /** A lease store (claim → effect in its own transaction → complete, or release when it did not apply). */
    static Strategy lease(String id, String description, IdempotencyStore store, LabDatabase db) {
        Guard guard = Guard.builder(store)
                .namespace("idem-lab-" + id)
                // A consumer that dies holding a claim blocks its key until the lease ends; the watchdog extends
                // the lease of a live handler, so a short one costs nothing but a quick takeover after a crash.
                .lease(Duration.ofSeconds(5))
                .retention(Duration.ofHours(1))
                .build();
        return new Base(id, description, true, db) {
            @Override
            public Outcome handle(Delivery d) {
                return guard.handle(
                        dev.idem.Delivery.of(d.event().key()),
                        ctx -> db.inTransaction(c -> {
                            d.insideEffect();
                            return book.apply(c, d.event());
                        }));
            }

            @Override
            public void close() {
                guard.close();
                store.close();
            }
        };
    }

    static Strategy leaseInMemory(LabDatabase db) {
        return lease("lease_memory", "lease store, in memory (Guard + InMemoryStore)", InMemoryStore.create(), db);
    }

    /** The order row guards itself: {@code UPDATE … SET status = :to WHERE id = ? AND status IN (:from)}. */
    static Strategy stateMachine(LabDatabase db) {
        String id = "state_machine";
        StateMachineGuard guard = StateMachineGuard.builder(ORDER_LIFECYCLE)
                .table("lab_" + id + "_orders")
                .build();
        UniqueRowGuard create = UniqueRowGuard.builder()
                .table("lab_" + id + "_orders")
                .uniqueKey("id")
                .build();
        return new Base(id, "order state machine (StateMachineGuard; CREATE by UniqueRowGuard)", true, db) {
            @Override
            public Outcome handle(Delivery d) {
                OrderEvent e = d.event();
                return db.inTransaction(c -> {
                    d.insideEffect();
                    if (e.type() == OrderEvent.Type.CREATE) {
                        return create.insertOnce(c, newOrder(e), TransactionalHandler.NONE);
                    }
                    return guard.apply(
                            c,
                            e.orderId(),
                            e.type().name(),
                            Assignments.of().add("version", 1),
                            e.type() == OrderEvent.Type.PAY ? debit(book, e) : TransactionalHandler.NONE);
                });
            }
        };
    }

    /** Each event carries the order version it was produced against: {@code … WHERE id = ? AND version = ?}. */
    static Strategy version(LabDatabase db) {
        String id = "version";
        VersionGuard guard =
                VersionGuard.builder().table("lab_" + id + "_orders").build();
        UniqueRowGuard create = UniqueRowGuard.builder()
                .table("lab_" + id + "_orders")
                .uniqueKey("id")
                .build();
        return new Base(id, "version guard (VersionGuard; CREATE by UniqueRowGuard)", true, db) {
            @Override
            public Outcome handle(Delivery d) {
                OrderEvent e = d.event();
                return db.inTransaction(c -> {
                    d.insideEffect();
                    if (e.type() == OrderEvent.Type.CREATE) {
                        return create.insertOnce(c, newOrder(e), TransactionalHandler.NONE);
                    }
                    String target = ORDER_LIFECYCLE.targetOf(e.type().name());
                    return guard.apply(
                            c,
                            e.orderId(),
                            e.version(),
                            Assignments.of().set("status", target),
                            e.type() == OrderEvent.Type.PAY ? debit(book, e) : TransactionalHandler.NONE);
                });
            }
        };
    }

    /** The order's charge, as a guard's side effect. */
    private static TransactionalHandler debit(OrderBook book, OrderEvent e) {
        return conn -> {
            book.debit(conn, e);
            return Outcome.processed();
        };
    }

    private static Map<String, Object> newOrder(OrderEvent e) {
        return Map.of(
                "id", e.orderId(),
                "customer_id", e.customerId(),
                "amount", e.amount(),
                "status", "PENDING",
                "version", 1L);
    }

    private abstract static class Base implements Strategy {
        private final String id;
        private final String description;
        private final boolean guarded;
        final LabDatabase db;
        final OrderBook book;

        Base(String id, String description, boolean guarded, LabDatabase db) {
            this.id = id;
            this.description = description;
            this.guarded = guarded;
            this.db = db;
            this.book = new OrderBook("lab_" + id);
        }

        @Override
        public String id() {
            return id;
        }

        @Override
        public String description() {
            return description;
        }

        @Override
        public boolean guarded() {
            return guarded;
        }
    }
}
