package dev.idem.spring.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.idem.outbox.OutboxMessage;
import dev.idem.outbox.OutboxRelay;
import dev.idem.outbox.spi.OutboxPublisher;
import dev.idem.outbox.spi.OutboxRecord;
import dev.idem.testsupport.ReadmeSnippets;
import dev.idem.testsupport.TestDatabase;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DelegatingDataSource;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.annotation.EnableTransactionManagement;
import org.springframework.transaction.annotation.Transactional;

/**
 * The outbox in a Spring context on H2: Flyway creates its tables, {@link SpringOutbox} joins the
 * {@code @Transactional} method's transaction (a rollback leaves no message), the relay runs with the context and
 * hands its shards back when the context closes, and the backlog shows in the gauges and the health indicator.
 */
class OutboxAutoConfigurationTest {
    static final TestDatabase DB = TestDatabase.h2("outboxautoconfig");

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    IdemOutboxAutoConfiguration.class,
                    IdemOutboxObservabilityAutoConfiguration.class,
                    org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration.class))
            .withBean(DataSource.class, () -> new DelegatingDataSource(DB.dataSource()))
            .withUserConfiguration(App.class)
            .withPropertyValues(
                    "spring.flyway.baseline-on-migrate=true",
                    "idem.outbox.relay.poll-interval=20ms",
                    "idem.outbox.relay.lease=5s",
                    "idem.outbox.relay.publish-timeout=1s");

    @AfterAll
    static void drop() {
        DB.close();
    }

    @Test
    void transactionalMethod_sendsWithItsWrites_aRollbackSendsNothing_andTheRelayRunsWithTheContext() {
        runner.run(context -> {
            Payments payments = context.getBean(Payments.class);
            Broker broker = context.getBean(Broker.class);

            String id = payments.pay("order-1");
            assertThatThrownBy(() -> payments.payThenFail("order-2")).isInstanceOf(IllegalStateException.class);

            await().atMost(Duration.ofSeconds(30)).until(() -> broker.records.size() == 1);
            assertThat(broker.records.get(0).messageId()).isEqualTo(id);
            assertThat(broker.records.get(0).key()).isEqualTo("order-1");
            JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));
            assertThat(jdbc.queryForObject(
                            "SELECT COUNT(*) FROM payments WHERE order_id IN ('order-1', 'order-2')", Long.class))
                    .isEqualTo(1);
            assertThat(jdbc.queryForObject(
                            "SELECT COUNT(*) FROM idem_outbox WHERE message_key IN ('order-1', 'order-2')", Long.class))
                    .isEqualTo(1);
            assertThat(context.getBean(OutboxRelayLifecycle.class).isRunning()).isTrue();
        });
        assertThat(new JdbcTemplate(DB.dataSource())
                        .queryForObject("SELECT COUNT(*) FROM idem_outbox_shards WHERE owner IS NOT NULL", Long.class))
                .as("the closed context's relay handed its shards back")
                .isZero();
        ReadmeSnippets.assertShown(
                Path.of("src/test/java/dev/idem/spring/outbox/OutboxAutoConfigurationTest.java"), "spring-outbox");
    }

    @Test
    void sendOutsideATransaction_isRefused_withTheFix() {
        runner.run(context -> assertThatThrownBy(() -> context.getBean(SpringOutbox.class)
                        .send(OutboxMessage.to("payments").key("k").payload("x")))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("@Transactional"));
    }

    @Test
    void everyOutboxListenerBean_hearsTheRelay_oneThatThrowsStopsNoOther() {
        List<String> heard = new CopyOnWriteArrayList<>();
        runner.withBean("alerts", dev.idem.outbox.OutboxListener.class, () -> new dev.idem.outbox.OutboxListener() {
                    @Override
                    public void published(List<OutboxRecord> records) {
                        heard.add("alerts");
                        throw new IllegalStateException("the alerting listener is broken");
                    }
                })
                .withBean("audit", dev.idem.outbox.OutboxListener.class, () -> new dev.idem.outbox.OutboxListener() {
                    @Override
                    public void published(List<OutboxRecord> records) {
                        heard.add("audit");
                    }
                })
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    context.getBean(Payments.class).pay("order-l");
                    await().atMost(Duration.ofSeconds(30))
                            .until(() -> heard.contains("alerts") && heard.contains("audit"));
                });
    }

    @Test
    void theBacklog_showsInTheGaugesAndTheHealthIndicator() {
        runner.withPropertyValues("idem.outbox.relay.enabled=false").run(context -> {
            assertThat(context).doesNotHaveBean(OutboxRelay.class);
            assertThat(context).hasSingleBean(SpringOutbox.class);
        });
        runner.run(context -> {
            Broker broker = context.getBean(Broker.class);
            OutboxRelay relay = context.getBean(OutboxRelay.class);
            MeterRegistry registry = context.getBean(MeterRegistry.class);
            broker.refuse = true;
            context.getBean(Payments.class).pay("order-3");
            await().atMost(Duration.ofSeconds(30))
                    .untilAsserted(() -> assertThat(
                                    registry.get("idem.outbox.unsent").gauge().value())
                            .as(() -> "the gauge (NaN: reading the stats failed); the relay's own stats: "
                                    + statsOf(relay))
                            .isGreaterThanOrEqualTo(1));
            var health = context.getBean(OutboxHealthIndicator.class).health();
            assertThat(health.getStatus()).isEqualTo(Status.UP);
            assertThat(health.getDetails()).containsKeys("unsent", "parked", "oldestUnsentAge");
            assertThat(registry.get("idem.outbox.parked")
                            .tag("table", "idem_outbox")
                            .gauge()
                            .value())
                    .isZero();
            assertThat(registry.get("idem.outbox.oldest.unsent.age").gauge().value())
                    .isGreaterThanOrEqualTo(0);
            broker.refuse = false;
            await().atMost(Duration.ofSeconds(60)).until(() -> relay.stats().unsent() == 0);
        });
    }

    private static String statsOf(OutboxRelay relay) {
        try {
            return relay.stats().toString();
        } catch (RuntimeException e) {
            return "unreadable: " + e;
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableTransactionManagement
    static class App {
        @Bean
        PlatformTransactionManager transactionManager(DataSource dataSource) {
            return new DataSourceTransactionManager(dataSource);
        }

        @Bean
        Broker broker() {
            return new Broker();
        }

        @Bean
        MeterRegistry meterRegistry() {
            return new SimpleMeterRegistry();
        }

        @Bean
        Payments payments(DataSource dataSource, SpringOutbox outbox) {
            new JdbcTemplate(dataSource).execute("CREATE TABLE IF NOT EXISTS payments (order_id VARCHAR(64))");
            return new Payments(new JdbcTemplate(dataSource), outbox);
        }
    }

    /** The broker at the publisher SPI: keeps what it acknowledged; refuses to answer while {@code refuse}. */
    static final class Broker implements OutboxPublisher {
        final List<OutboxRecord> records = new CopyOnWriteArrayList<>();
        volatile boolean refuse;

        @Override
        public CompletableFuture<Void> publish(OutboxRecord record) {
            if (refuse) {
                return CompletableFuture.failedFuture(new java.io.IOException("the broker does not answer"));
            }
            records.add(record);
            return CompletableFuture.completedFuture(null);
        }
    }

    /** A service whose payment and "payment completed" commit together. */
    static class Payments {
        private final JdbcTemplate jdbc;
        private final SpringOutbox outbox;

        Payments(JdbcTemplate jdbc, SpringOutbox outbox) {
            this.jdbc = jdbc;
            this.outbox = outbox;
        }

        // readme:spring-outbox begin
        @Transactional
        public String pay(String orderId) {
            jdbc.update("INSERT INTO payments (order_id) VALUES (?)", orderId);
            // commits with the insert (and, in an @Idempotent method, with the inbox mark), or not at all
            return outbox.send(OutboxMessage.to("payments").key(orderId).payload("paid " + orderId));
        }
        // readme:spring-outbox end

        @Transactional
        public String payThenFail(String orderId) {
            pay(orderId);
            throw new IllegalStateException("the payment failed after the send");
        }
    }
}
