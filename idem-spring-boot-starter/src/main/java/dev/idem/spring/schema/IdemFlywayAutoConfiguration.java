package dev.idem.spring.schema;

import dev.idem.spring.IdemProperties;
import org.flywaydb.core.api.migration.JavaMigration;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.flyway.autoconfigure.FlywayMigrationStrategy;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * When the application has Flyway, adds Idem's tables to its migrations ({@link IdemFlywayMigration}; Spring Boot's
 * Flyway runs every {@link JavaMigration} bean), also on a schema that has tables but no Flyway history ({@link
 * IdemFlywayMigrationStrategy}). Off with {@code idem.jdbc.flyway=false}.
 */
@AutoConfiguration(beforeName = "org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration")
@ConditionalOnClass(JavaMigration.class)
@ConditionalOnProperty(prefix = "idem.jdbc", name = "flyway", matchIfMissing = true)
@EnableConfigurationProperties(IdemProperties.class)
public class IdemFlywayAutoConfiguration {

    @Bean
    IdemFlywayMigration idemFlywayMigration(IdemProperties properties) {
        return new IdemFlywayMigration(properties.getJdbc().getTable());
    }

    /** Unless the application has its own strategy: Idem's table also on a schema made before Flyway came. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(FlywayMigrationStrategy.class)
    static class MigrationStrategy {
        @Bean
        @ConditionalOnMissingBean(FlywayMigrationStrategy.class)
        FlywayMigrationStrategy idemFlywayMigrationStrategy() {
            return new IdemFlywayMigrationStrategy();
        }
    }
}
