package dev.idem.demo;

import java.sql.SQLException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Counts the damage with SQL on a strategy's business tables against {@code lab_expected}, never from the
 * consumer's own counters. The queries are printed in the README so anyone can run them; {@code {p}} is the
 * strategy's table prefix ({@code lab_none}, {@code lab_inbox}, ...).
 */
final class Verification {
    private Verification() {}

    /** Orders with more than one ledger row (charged more than once). */
    static final String DOUBLE_CHARGED =
            "SELECT COUNT(*) FROM (SELECT order_id FROM {p}_ledger" + " GROUP BY order_id HAVING COUNT(*) > 1) d";

    /** Money taken beyond one charge per paid order. */
    static final String OVERCHARGED = "SELECT COALESCE(SUM(l.amount), 0) - (SELECT COALESCE(SUM(e.amount), 0)"
            + " FROM lab_expected e WHERE e.paid = 1 AND EXISTS (SELECT 1 FROM {p}_ledger x WHERE x.order_id ="
            + " e.order_id)) FROM {p}_ledger l";

    /** Orders that should be paid and have no ledger row. */
    static final String LOST_PAYMENTS = "SELECT COUNT(*) FROM lab_expected e WHERE e.paid = 1 AND NOT EXISTS"
            + " (SELECT 1 FROM {p}_ledger l WHERE l.order_id = e.order_id)";

    /** Cancelled orders that were charged anyway. */
    static final String CHARGED_CANCELLED = "SELECT COUNT(DISTINCT l.order_id) FROM {p}_ledger l JOIN lab_expected e"
            + " ON e.order_id = l.order_id WHERE e.paid = 0";

    /** Orders missing, or not in the state their last event implies. */
    static final String WRONG_STATE = "SELECT COUNT(*) FROM lab_expected e LEFT JOIN {p}_orders o ON o.id ="
            + " e.order_id WHERE o.id IS NULL OR o.status <> e.final_status";

    /** Accounts whose balance is not minus the sum of their customer's paid orders. */
    static final String WRONG_BALANCES = "SELECT COUNT(*) FROM {p}_accounts a WHERE a.balance <> -(SELECT"
            + " COALESCE(SUM(e.amount), 0) FROM lab_expected e WHERE e.customer_id = a.id AND e.paid = 1)";

    /** Charges applied (ledger rows). */
    static final String CHARGES = "SELECT COUNT(*) FROM {p}_ledger";

    /** The queries by name, in report order. */
    static Map<String, String> queries() {
        Map<String, String> q = new LinkedHashMap<>();
        q.put("double_charged_orders", DOUBLE_CHARGED);
        q.put("overcharged_amount", OVERCHARGED);
        q.put("lost_payments", LOST_PAYMENTS);
        q.put("charged_cancelled_orders", CHARGED_CANCELLED);
        q.put("wrong_final_state", WRONG_STATE);
        q.put("wrong_balances", WRONG_BALANCES);
        q.put("charges", CHARGES);
        return q;
    }

    /** Runs every query on the tables of {@code prefix}. */
    static Map<String, Long> run(LabDatabase db, String prefix) throws SQLException {
        Map<String, Long> values = new LinkedHashMap<>();
        for (Map.Entry<String, String> q : queries().entrySet()) {
            values.put(q.getKey(), db.queryLong(q.getValue().replace("{p}", prefix)));
        }
        return values;
    }
}
