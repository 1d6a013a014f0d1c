package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.jdbc.JdbcInbox;
import dev.idem.jdbc.JdbcStore;
import dev.idem.micrometer.MicrometerListener;
import dev.idem.spi.IdempotencyStore;
import dev.idem.spring.actuate.IdemHealthIndicator;
import dev.idem.spring.kafka.IdemKafkaAutoConfiguration;
import dev.idem.spring.schema.IdemFlywayMigration;
import dev.idem.testsupport.TestDatabase;
import io.micrometer.common.KeyValue;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.tck.TestObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistryAssert;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DelegatingDataSource;
import org.springframework.kafka.listener.CommonErrorHandler;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.annotation.EnableTransactionManagement;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionTemplate;

/** The auto-configuration's beans, conditions and back-offs, on an in-memory H2 database. */
class IdemAutoConfigurationTest {
    static final TestDatabase DB = TestDatabase.h2("autoconfig");

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    IdemRedisAutoConfiguration.class,
                    IdemAutoConfiguration.class,
                    IdemMetricsAutoConfiguration.class,
                    IdemObservationAutoConfiguration.class,
                    IdemKafkaAutoConfiguration.class,
                    dev.idem.spring.schema.IdemFlywayAutoConfiguration.class,
                    dev.idem.spring.actuate.IdemActuatorAutoConfiguration.class))
            .withBean(
                    DataSource.class, () -> new DelegatingDataSource(DB.dataSource())) // the context must not close it
            .withPropertyValues("idem.namespace=orders", "idem.jdbc.create-table-if-missing=true");

    @AfterAll
    static void drop() {
        DB.close();
    }

    @Test
    void withADataSource_theInboxTheLeaseStoreTheErrorHandlerAndTheMigrationAreDeclared() {
        runner.run(context -> {
            assertThat(context).hasSingleBean(IdempotentGuards.class);
            assertThat(context).hasSingleBean(JdbcStore.class);
            assertThat(context).hasSingleBean(IdemPurge.class);
            assertThat(context).hasSingleBean(DefaultErrorHandler.class);
            assertThat(context).hasSingleBean(IdemFlywayMigration.class);
            assertThat(context).hasSingleBean(IdemHealthIndicator.class);
            assertThat(context).doesNotHaveBean(MicrometerListener.class);
            IdempotentGuards guards = context.getBean(IdempotentGuards.class);
            assertThat(guards.inbox("orders").namespace()).isEqualTo("orders");
            assertThat(guards.guard("orders")).isNotNull();
        });
    }

    @Test
    void applicationBeans_replaceTheStarters() {
        runner.withUserConfiguration(OwnBeans.class).run(context -> {
            assertThat(context.getBean(IdempotencyStore.class)).isSameAs(OwnBeans.STORE);
            assertThat(context).doesNotHaveBean(JdbcStore.class);
            assertThat(context.getBean(CommonErrorHandler.class)).isSameAs(OwnBeans.ERRORS);
        });
    }

    @Test
    void withAMeterRegistry_outcomesAreMetered() {
        runner.withBean(SimpleMeterRegistry.class, SimpleMeterRegistry::new).run(context -> {
            assertThat(context).hasSingleBean(MicrometerListener.class);
            SimpleMeterRegistry registry = context.getBean(SimpleMeterRegistry.class);
            context.getBean(IdempotentGuards.class).guard("orders").run("o-1", () -> {});
            assertThat(registry.get(MicrometerListener.HANDLINGS)
                            .tags("namespace", "orders", "outcome", "processed")
                            .timer()
                            .count())
                    .isEqualTo(1);
        });
    }

    @Test
    void withAnObservationRegistry_eachCallIsObservedWithBoundedKeyValuesAndItsError() {
        TestObservationRegistry observations = TestObservationRegistry.create();
        runner.withBean(TestObservationRegistry.class, () -> observations)
                .withUserConfiguration(Transactions.class)
                .run(context -> {
                    Transactions.Service service = context.getBean(Transactions.Service.class);
                    String key = "obs-" + System.nanoTime();
                    service.succeed(key);
                    service.succeed(key);
                    assertThatThrownBy(() -> service.failAfterTheMark(key + "-fails"))
                            .isInstanceOf(IllegalStateException.class);
                    service.outsideATransaction(key + "-leased");
                });
        TestObservationRegistryAssert.assertThat(observations)
                .hasNumberOfObservationsWithNameEqualTo("idem.handling", 4)
                .hasHandledContextsThatSatisfy(contexts -> {
                    assertThat(contexts)
                            .extracting(c ->
                                    c.getLowCardinalityKeyValue("idem.outcome").getValue())
                            .containsExactly("processed", "duplicate", "failed", "processed");
                    assertThat(contexts)
                            .extracting(c -> c.getLowCardinalityKeyValue("idem.guard.kind")
                                    .getValue())
                            .containsExactly("inbox", "inbox", "inbox", "lease");
                    assertThat(contexts.get(2).getError())
                            .isInstanceOf(IllegalStateException.class)
                            .hasMessage("after the mark");
                    assertThat(contexts.get(0).getError()).isNull();
                    assertThat(contexts.get(0).getContextualName()).isEqualTo("idem orders");
                    assertThat(contexts.get(0)
                                    .getLowCardinalityKeyValue("idem.store")
                                    .getValue())
                            .isEqualTo("h2 idem_keys (inbox orders)");
                    assertThat(contexts.get(3)
                                    .getLowCardinalityKeyValue("idem.store")
                                    .getValue())
                            .startsWith("h2 idem_keys");
                    for (var c : contexts) {
                        assertThat(c.getLowCardinalityKeyValues())
                                .extracting(KeyValue::getKey)
                                .containsExactlyInAnyOrder(
                                        "idem.namespace", "idem.guard.kind", "idem.store", "idem.outcome");
                        assertThat(c.getLowCardinalityKeyValue("idem.namespace").getValue())
                                .isEqualTo("orders");
                        assertThat(c.getHighCardinalityKeyValues()).isEmpty();
                    }
                });
    }

    @Test
    void propertiesAndCustomizers_shapeTheGuards() {
        runner.withPropertyValues("idem.jdbc.lease-store=false", "idem.kafka.error-handler=false")
                .withBean(IdemGuardCustomizer.class, () -> new IdemGuardCustomizer() {
                    @Override
                    public void customize(String namespace, JdbcInbox.Builder inbox) {
                        inbox.deadlockRetries(0);
                    }
                })
                .run(context -> {
                    assertThat(context).doesNotHaveBean(JdbcStore.class);
                    assertThat(context).doesNotHaveBean(DefaultErrorHandler.class);
                    assertThat(context.getBean(IdempotentGuards.class).guard("orders"))
                            .isNull();
                });
    }

    @Test
    void idempotentMethod_insideATransaction_writesItsMarkOnTheTransactionsConnection() {
        runner.withUserConfiguration(Transactions.class).run(context -> {
            Transactions.Service service = context.getBean(Transactions.Service.class);
            DataSource ds = context.getBean(DataSource.class);
            String key = "tx-" + System.nanoTime();
            try {
                service.failAfterTheMark(key);
            } catch (IllegalStateException expected) {
                // the transaction rolled back, and the mark with it
            }
            assertThat(marks(ds, "orders:" + key)).isZero();
            new TransactionTemplate(context.getBean(PlatformTransactionManager.class)).executeWithoutResult(status -> {
                service.succeed(key); // returns normally, then the caller's transaction rolls back: so does the mark
                status.setRollbackOnly();
            });
            assertThat(marks(ds, "orders:" + key)).isZero();
            service.succeed(key);
            service.succeed(key);
            assertThat(service.calls()).isEqualTo(3); // failed, rolled back, applied; the fourth call a duplicate
            assertThat(marks(ds, "orders:" + key)).isEqualTo(1);
        });
    }

    @Test
    void idempotentMethod_withoutANamespace_failsWithTheFix() {
        runner.withPropertyValues("idem.namespace=")
                .withUserConfiguration(Transactions.class)
                .run(context -> {
                    Transactions.Service service = context.getBean(Transactions.Service.class);
                    org.assertj.core.api.Assertions.assertThatThrownBy(() -> service.succeed("k"))
                            .hasMessageContaining("idem.namespace");
                });
    }

    static int marks(DataSource ds, String id) throws Exception {
        try (var c = ds.getConnection();
                var s = c.prepareStatement("SELECT COUNT(*) FROM idem_keys WHERE id = ?")) {
            s.setString(1, id);
            try (var rs = s.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnBeans {
        static final IdempotencyStore STORE = dev.idem.InMemoryStore.create();
        static final CommonErrorHandler ERRORS = new DefaultErrorHandler();

        @Bean
        IdempotencyStore store() {
            return STORE;
        }

        @Bean
        CommonErrorHandler errors() {
            return ERRORS;
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableTransactionManagement
    static class Transactions {
        @Bean
        DataSourceTransactionManager transactionManager(DataSource ds) {
            return new DataSourceTransactionManager(ds);
        }

        @Bean
        Service service() {
            return new Service();
        }

        static class Service {
            private int calls;

            public int calls() {
                return calls;
            }

            @Transactional
            @Idempotent(key = "#key")
            public void failAfterTheMark(String key) {
                calls++;
                throw new IllegalStateException("after the mark");
            }

            @Transactional
            @Idempotent(key = "#key")
            public void succeed(String key) {
                calls++;
            }

            @Idempotent(key = "#key")
            public void outsideATransaction(String key) {
                calls++;
            }
        }
    }
}
