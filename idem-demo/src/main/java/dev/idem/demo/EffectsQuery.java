package dev.idem.demo;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The user's SQL that lists the applied effects: one row per effect, the payment id first, then optionally the
 * account and the amount in cents. Without {@code --effects-sql} the lab's ledger convention: the lab creates {@value
 * #LEDGER} and the consumer inserts one row per payment it applies.
 */
final class EffectsQuery {
    static final String LEDGER = "idem_lab_ledger";
    static final String LEDGER_DDL = "CREATE TABLE " + LEDGER
            + " (payment_id VARCHAR(128) NOT NULL, account VARCHAR(64) NOT NULL, amount BIGINT NOT NULL)";
    static final String CONVENTION = "SELECT payment_id, account, amount FROM " + LEDGER;

    /** One applied effect; account and amount are null when the query returns the payment id only. */
    record Row(
            String paymentId,
            @Nullable String account,
            @Nullable Long amount) {}

    private final LabDatabase db;
    private final String sql;
    private final boolean convention;

    EffectsQuery(LabDatabase db, @Nullable String userSql) {
        this.db = db;
        this.sql = userSql == null ? CONVENTION : userSql.trim().replaceAll(";\\s*$", "");
        this.convention = userSql == null;
    }

    String sql() {
        return sql;
    }

    boolean convention() {
        return convention;
    }

    /** With the convention: drops and creates the ledger table. */
    void prepare() throws SQLException {
        if (convention) {
            db.dropTable(LEDGER);
            try (Connection c = db.dataSource().getConnection();
                    Statement s = c.createStatement()) {
                s.execute(LEDGER_DDL);
            }
        }
    }

    /** How many effects the query returns now. */
    long count() throws SQLException {
        return db.queryLong("SELECT COUNT(*) FROM (" + sql + ") idem_lab_effects");
    }

    List<Row> rows() throws SQLException {
        List<Row> rows = new ArrayList<>();
        try (Connection c = db.dataSource().getConnection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(sql)) {
            ResultSetMetaData meta = rs.getMetaData();
            boolean full = meta.getColumnCount() >= 3;
            while (rs.next()) {
                String id = rs.getString(1);
                if (full) {
                    long amount = rs.getLong(3);
                    rows.add(new Row(id, rs.getString(2), rs.wasNull() ? null : amount));
                } else {
                    rows.add(new Row(id, null, null));
                }
            }
        }
        return rows;
    }
}
