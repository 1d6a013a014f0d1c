package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.ConfigurationException;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The public DDL that migrations (the Spring Boot starter's Flyway and Liquibase changes) run. */
class SchemaDdlTest {

    @Test
    void everyTableOfTheShippedDdl_theKeysTableRenamed() {
        List<String> ddl = Schema.ddl(Dialect.POSTGRESQL, "payments_keys");
        assertThat(ddl).hasSize(4);
        assertThat(ddl.get(0)).startsWith("CREATE TABLE IF NOT EXISTS payments_keys (");
        assertThat(ddl)
                .anySatisfy(sql -> assertThat(sql).startsWith("CREATE SEQUENCE IF NOT EXISTS payments_keys_fencing"));
        assertThat(ddl).anySatisfy(sql -> assertThat(sql).startsWith("CREATE TABLE IF NOT EXISTS idem_node_ids"));
        assertThat(String.join(";", ddl)).doesNotContain("idem_keys").doesNotContain("--");
    }

    @Test
    void mysql_hasNoSequence_mariaDbHasOne() {
        assertThat(Schema.ddl(Dialect.MYSQL, "idem_keys")).noneMatch(sql -> sql.contains("SEQUENCE"));
        assertThat(Schema.ddl(Dialect.MARIADB, "idem_keys")).anyMatch(sql -> sql.contains("SEQUENCE"));
    }

    @Test
    void aTableNameThatIsNotAPlainIdentifier_isRefused() {
        assertThatThrownBy(() -> Schema.ddl(Dialect.H2, "keys; DROP TABLE x"))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("not allowed");
    }
}
