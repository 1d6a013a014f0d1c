package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Delivery;
import dev.idem.Outcome;
import dev.idem.testsupport.TestDatabase;
import java.sql.SQLException;
import java.util.List;
import org.junit.jupiter.api.Test;

class MariaDbInboxTest extends ServerInboxTestBase {
    @Override
    protected TestDatabase open() {
        return TestDatabase.mariadb("MariaDbInboxTest");
    }

    @Override
    protected String backendIdQuery() {
        return "SELECT CONNECTION_ID()";
    }

    @Override
    protected String killStatement(long id) {
        return "KILL " + id;
    }

    /** The MySQL dialect has no RETURNING: a batch finds its inserted marks by its owner token. */
    @Test
    void mysqlDialect_batchWithoutReturning_tellsNewKeysFromTakenOnes() throws SQLException {
        JdbcInbox inbox = inboxBuilder().dialect(Dialect.MYSQL).build();
        inbox.handle(Delivery.of("b"), pay("b", 2, 20));

        List<Outcome> outcomes = handleEach(
                inbox,
                message("c", null, pay("c", 3, 30)),
                message("b", null, pay("b", 2, 20)),
                message("a", null, pay("a", 1, 10)));

        assertThat(outcomes)
                .extracting(Outcome::type)
                .containsExactly(Outcome.Type.PROCESSED, Outcome.Type.DUPLICATE, Outcome.Type.PROCESSED);
        assertThat(balance(2)).isEqualTo(INITIAL_BALANCE - 20);
        assertThat(ledgerRows("a") + ledgerRows("b") + ledgerRows("c")).isEqualTo(3);
    }
}
