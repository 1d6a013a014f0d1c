package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Outcome;
import dev.idem.StateMachine;
import dev.idem.testsupport.ReadmeSnippets;
import dev.idem.testsupport.TestDatabase;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

class ReadmeOrderExampleTest {
    private static final Path SOURCE = Path.of("src/test/java/dev/idem/jdbc/ReadmeOrderExampleTest.java");

    record Event(String type, String orderId) {}

    @Test
    void readmeOrderExample_compilesRuns_andIsShownVerbatim() throws SQLException {
        try (TestDatabase db = TestDatabase.h2("ReadmeOrderExampleTest")) {
            db.execute("CREATE TABLE orders (id VARCHAR(64) PRIMARY KEY, status VARCHAR(32) NOT NULL,"
                    + " paid_at TIMESTAMP NULL)");
            db.execute("CREATE TABLE ledger (order_id VARCHAR(64) NOT NULL)");
            List<Outcome.Type> outcomes = new ArrayList<>();
            for (String type : List.of("PAY", "CREATE", "PAY", "PAY", "SHIP", "CANCEL")) {
                outcomes.add(handle(db.dataSource(), new Event(type, "10086")).type());
            }

            assertThat(outcomes)
                    .containsExactly(
                            Outcome.Type.OUT_OF_ORDER,
                            Outcome.Type.PROCESSED,
                            Outcome.Type.PROCESSED,
                            Outcome.Type.DUPLICATE,
                            Outcome.Type.PROCESSED,
                            Outcome.Type.REJECTED);
            try (Connection c = db.connection();
                    ResultSet rs = c.createStatement().executeQuery("SELECT COUNT(*) FROM ledger")) {
                rs.next();
                assertThat(rs.getInt(1)).isEqualTo(1);
            }
        }
        ReadmeSnippets.assertShown(SOURCE, "order");
    }

    private static Outcome handle(DataSource dataSource, Event event) {
        // readme:order begin
        StateMachine lifecycle = StateMachine.builder()
                .states("PENDING", "PAID", "SHIPPED", "CANCELLED")
                .initial("PENDING")
                .transition("PAY", "PENDING", "PAID")
                .transition("SHIP", "PAID", "SHIPPED")
                .transition("CANCEL", "PENDING", "CANCELLED")
                .build(); // refuses unknown or unreachable states, ambiguous events, cycles
        StateMachineGuard orders =
                StateMachineGuard.builder(lifecycle).table("orders").build();
        UniqueRowGuard newOrders =
                UniqueRowGuard.builder().table("orders").uniqueKey("id").build();

        OwnTransaction tx = OwnTransaction.of(dataSource); // commits when final, rolls back otherwise
        TransactionalHandler charge =
                event.type().equals("PAY") ? c -> chargeCustomer(c, event) : TransactionalHandler.NONE;
        Outcome outcome = tx.run(c -> event.type().equals("CREATE")
                ? newOrders.insertOnce(c, Map.of("id", event.orderId(), "status", "PENDING"), TransactionalHandler.NONE)
                : orders.apply(
                        c, event.orderId(), event.type(), Assignments.of(), charge)); // charge only if PAY applied
        // PROCESSED, DUPLICATE → ack; OUT_OF_ORDER (cancel before create, ship before pay) → retry later;
        // REJECTED (PAY on a CANCELLED order, naming both states) → dead-letter
        // readme:order end
        return outcome;
    }

    private static Outcome chargeCustomer(Connection c, Event event) throws SQLException {
        try (var ps = c.prepareStatement("INSERT INTO ledger (order_id) VALUES (?)")) {
            ps.setString(1, event.orderId());
            ps.executeUpdate();
        }
        return Outcome.processed();
    }
}
