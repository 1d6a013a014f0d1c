package dev.idem.demo;

import dev.idem.Outcome;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import org.jspecify.annotations.Nullable;

/**
 * The business effect of one strategy's tables {@code <prefix>_orders}, {@code _accounts}, {@code _ledger}, as a
 * developer writes it before thinking about duplicates: PAY debits the customer and adds a ledger row, every time it
 * runs. It waits (answers {@code OUT_OF_ORDER}) only when the order it needs is not there yet, so reordering is
 * survivable; a duplicate that reaches it charges again.
 */
final class OrderBook {
    private final String orders;
    private final String accounts;
    private final String ledger;

    OrderBook(String prefix) {
        this.orders = prefix + "_orders";
        this.accounts = prefix + "_accounts";
        this.ledger = prefix + "_ledger";
    }

    String ordersTable() {
        return orders;
    }

    /** The unguarded effect of {@code e}, on the caller's transaction. */
    Outcome apply(Connection c, OrderEvent e) throws SQLException {
        String status = status(c, e.orderId());
        switch (e.type()) {
            case CREATE -> {
                if (status != null) {
                    return Outcome.processed("order exists already");
                }
                insertOrder(c, e);
                return Outcome.processed("created");
            }
            case PAY -> {
                if (status == null) {
                    return Outcome.outOfOrder("PAY before the order exists");
                }
                debit(c, e);
                setStatus(c, e.orderId(), "PAID");
                return Outcome.processed("paid");
            }
            case SHIP -> {
                if (status == null || status.equals("PENDING")) {
                    return Outcome.outOfOrder("SHIP before the order is paid");
                }
                setStatus(c, e.orderId(), "SHIPPED");
                return Outcome.processed("shipped");
            }
            case CANCEL -> {
                if (status == null) {
                    return Outcome.outOfOrder("CANCEL before the order exists");
                }
                setStatus(c, e.orderId(), "CANCELLED");
                return Outcome.processed("cancelled");
            }
            default -> throw new IllegalStateException("unknown event type " + e.type());
        }
    }

    /** The money: debit the customer's account and write a ledger row. Not idempotent. */
    void debit(Connection c, OrderEvent e) throws SQLException {
        try (PreparedStatement ps =
                c.prepareStatement("UPDATE " + accounts + " SET balance = balance - ? WHERE id = ?")) {
            ps.setLong(1, e.amount());
            ps.setLong(2, e.customerId());
            ps.executeUpdate();
        }
        try (PreparedStatement ps = c.prepareStatement(
                "INSERT INTO " + ledger + " (order_id, customer_id, amount, message_key) VALUES (?, ?, ?, ?)")) {
            ps.setLong(1, e.orderId());
            ps.setLong(2, e.customerId());
            ps.setLong(3, e.amount());
            ps.setString(4, e.key());
            ps.executeUpdate();
        }
    }

    void insertOrder(Connection c, OrderEvent e) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + orders
                + " (id, customer_id, amount, status, version) VALUES (?, ?, ?, 'PENDING', 1)")) {
            ps.setLong(1, e.orderId());
            ps.setLong(2, e.customerId());
            ps.setLong(3, e.amount());
            ps.executeUpdate();
        }
    }

    private @Nullable String status(Connection c, long id) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT status FROM " + orders + " WHERE id = ?")) {
            ps.setLong(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    private void setStatus(Connection c, long id, String status) throws SQLException {
        try (PreparedStatement ps =
                c.prepareStatement("UPDATE " + orders + " SET status = ?, version = version + 1 WHERE id = ?")) {
            ps.setString(1, status);
            ps.setLong(2, id);
            ps.executeUpdate();
        }
    }
}
