package dev.idem.spring.outbox;

import dev.idem.id.MessageIdGenerator;
import dev.idem.outbox.Outbox;
import dev.idem.outbox.OutboxListener;
import dev.idem.outbox.OutboxRelay;
import dev.idem.outbox.spi.OutboxPublisher;
import javax.sql.DataSource;
import org.flywaydb.core.api.migration.JavaMigration;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The outbox when idem-outbox is on the class path and the application has a {@link DataSource}: a {@link
 * SpringOutbox} joining the {@code @Transactional} method's transaction; the relay, started and stopped with the
 * context, when the application declares an {@link OutboxPublisher} bean (e.g. {@code KafkaOutboxPublisher}) and
 * {@code idem.outbox.relay.enabled} is not false; the outbox tables in Flyway's migrations. The backlog's gauges and
 * health: {@link IdemOutboxObservabilityAutoConfiguration}.
 */
@AutoConfiguration(
        afterName = "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
        beforeName = "org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration")
@ConditionalOnClass(Outbox.class)
@EnableConfigurationProperties(IdemOutboxProperties.class)
public class IdemOutboxAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnBean(DataSource.class)
    Outbox idemOutbox(IdemOutboxProperties properties, ObjectProvider<MessageIdGenerator> ids) {
        Outbox.Builder b = Outbox.builder().table(properties.getTable());
        ids.ifAvailable(b::ids);
        return b.build();
    }

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnBean({DataSource.class, Outbox.class})
    SpringOutbox idemSpringOutbox(Outbox outbox, DataSource dataSource) {
        return new SpringOutbox(outbox, dataSource);
    }

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnBean({DataSource.class, OutboxPublisher.class})
    @ConditionalOnProperty(prefix = "idem.outbox.relay", name = "enabled", matchIfMissing = true)
    OutboxRelay idemOutboxRelay(
            DataSource dataSource,
            OutboxPublisher publisher,
            IdemOutboxProperties properties,
            ObjectProvider<OutboxListener> listeners) {
        IdemOutboxProperties.Relay r = properties.getRelay();
        OutboxRelay.Builder b = OutboxRelay.builder(dataSource, publisher)
                .table(properties.getTable())
                .shards(r.getShards())
                .batchSize(r.getBatchSize())
                .pollInterval(r.getPollInterval())
                .lease(r.getLease())
                .publishTimeout(r.getPublishTimeout())
                .retention(r.getRetention());
        b.listener(new OutboxListeners(listeners.orderedStream().toList()));
        return b.build();
    }

    @Bean
    @ConditionalOnBean(OutboxRelay.class)
    OutboxRelayLifecycle idemOutboxRelayLifecycle(OutboxRelay relay) {
        return new OutboxRelayLifecycle(relay);
    }

    /** The outbox tables in the application's Flyway migrations. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(JavaMigration.class)
    @ConditionalOnProperty(prefix = "idem.outbox", name = "flyway", matchIfMissing = true)
    static class Flyway {
        @Bean
        IdemOutboxFlywayMigration idemOutboxFlywayMigration(IdemOutboxProperties properties) {
            return new IdemOutboxFlywayMigration(properties.getTable());
        }
    }
}
