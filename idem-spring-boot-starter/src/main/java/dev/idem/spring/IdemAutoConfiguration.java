package dev.idem.spring;

import dev.idem.IdempotencyListener;
import dev.idem.jdbc.JdbcStore;
import dev.idem.spi.IdempotencyStore;
import javax.sql.DataSource;
import org.springframework.aop.config.AopConfigUtils;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.ImportBeanDefinitionRegistrar;
import org.springframework.context.annotation.Role;
import org.springframework.core.type.AnnotationMetadata;

/**
 * Idem for a Spring Boot application: {@link Idempotent} methods guarded by an inbox on the application's {@code
 * DataSource} (inside its transactions) or a lease store (outside them), the scheduled purge. Every bean backs off
 * when the application declares its own.
 */
@AutoConfiguration(
        afterName = {
            "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
            "org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration",
            "dev.idem.spring.IdemRedisAutoConfiguration"
        })
@EnableConfigurationProperties(IdemProperties.class)
@Import(IdemAutoConfiguration.ProxyCreator.class)
public class IdemAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    ResultCodec idemResultCodec() {
        return new DefaultResultCodec();
    }

    @Bean
    @ConditionalOnMissingBean(IdempotencyStore.class)
    @ConditionalOnSingleCandidate(DataSource.class)
    @ConditionalOnProperty(prefix = "idem.jdbc", name = "lease-store", matchIfMissing = true)
    JdbcStore idemJdbcStore(DataSource dataSource, IdemProperties properties) {
        IdemProperties.Jdbc jdbc = properties.getJdbc();
        return JdbcStore.builder(dataSource)
                .table(jdbc.getTable())
                .createTableIfMissing(jdbc.isCreateTableIfMissing())
                .build();
    }

    @Bean
    @ConditionalOnMissingBean
    IdempotentGuards idempotentGuards(
            ObjectProvider<DataSource> dataSource,
            ObjectProvider<IdempotencyStore> leaseStore,
            IdemProperties properties,
            ObjectProvider<IdempotencyListener> listeners,
            ObjectProvider<IdemGuardCustomizer> customizers) {
        return new IdempotentGuards(
                dataSource.getIfUnique(),
                leaseStore.getIfUnique(),
                properties,
                new IdemListeners(listeners.orderedStream().toList()),
                customizers.orderedStream().toList());
    }

    @Bean
    @ConditionalOnBean(DataSource.class)
    @ConditionalOnMissingBean
    IdemPurge idemPurge(DataSource dataSource, IdemProperties properties) {
        return new IdemPurge(dataSource, properties.getJdbc());
    }

    /** The advisor, an infrastructure bean so that every auto-proxy creator applies it. */
    @Configuration(proxyBeanMethods = false)
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    static class Advice {
        @Bean
        @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
        static IdempotentAdvisor idempotentAdvisor(
                ObjectProvider<IdempotentGuards> guards,
                ObjectProvider<IdemProperties> properties,
                ObjectProvider<ResultCodec> codec,
                ObjectProvider<IdempotentObserver> observer) {
            return new IdempotentAdvisor(new LazyInterceptor(guards, properties, codec, observer));
        }

        @Bean
        @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
        static IdempotentAdvisor idempotentBatchFailureAdvisor() {
            return IdempotentAdvisor.outsideTheTransaction();
        }

        @Bean
        @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
        static UnreachableIdempotentMethods unreachableIdempotentMethods() {
            return new UnreachableIdempotentMethods();
        }
    }

    /** Makes sure an auto-proxy creator exists (Spring Boot's AOP auto-configuration may be excluded). */
    static class ProxyCreator implements ImportBeanDefinitionRegistrar {
        @Override
        public void registerBeanDefinitions(AnnotationMetadata metadata, BeanDefinitionRegistry registry) {
            AopConfigUtils.registerAutoProxyCreatorIfNecessary(registry);
        }
    }
}
