package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.ConfigurationException;
import dev.idem.testsupport.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DelegatingDataSource;
import org.springframework.kafka.listener.BatchListenerFailedException;
import org.springframework.transaction.annotation.EnableTransactionManagement;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionTemplate;

/** Where Spring's proxies and transactions could let an {@code @Idempotent} method run unguarded or lose a message. */
class IdempotentBoundariesTest {
    static final TestDatabase INBOX = TestDatabase.h2("boundaries-inbox");
    static final TestDatabase OTHER = TestDatabase.h2("boundaries-other");

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(IdemAutoConfiguration.class))
            .withBean(DataSource.class, () -> new DelegatingDataSource(INBOX.dataSource()))
            .withPropertyValues("idem.namespace=orders", "idem.jdbc.create-table-if-missing=true");

    @AfterAll
    static void drop() {
        INBOX.close();
        OTHER.close();
    }

    @Test
    void idempotentMethod_insideATransactionOfAnotherDataSource_isRefusedRatherThanMarkedBeforeThatCommit() {
        runner.withUserConfiguration(OtherTransactions.class).run(context -> {
            OtherTransactions.Service service = context.getBean(OtherTransactions.Service.class);
            TransactionTemplate other = new TransactionTemplate(context.getBean(DataSourceTransactionManager.class));
            String key = "other-" + System.nanoTime();
            assertThatThrownBy(() -> other.executeWithoutResult(status -> {
                        service.apply(key);
                        status.setRollbackOnly(); // the effect rolls back after the method returned
                    }))
                    .isInstanceOf(ConfigurationException.class)
                    .hasMessageContaining("transaction")
                    .hasMessageContaining("DataSource");
            service.apply(key); // outside any transaction the lease guards it, and the message is applied
            assertThat(service.calls()).isEqualTo(1);
        });
    }

    @Test
    void keysWhoseBytesDifferOnlyInInvalidUtf8_areTwoKeys_andBothMessagesAreApplied() {
        runner.withUserConfiguration(BinaryKeys.class).run(context -> {
            BinaryKeys.Service service = context.getBean(BinaryKeys.Service.class);
            String prefix = "k-" + System.nanoTime() + "-";
            byte[] fe = Arrays.copyOf(prefix.getBytes(StandardCharsets.UTF_8), prefix.length() + 1);
            byte[] ff = fe.clone();
            fe[prefix.length()] = (byte) 0xFE;
            ff[prefix.length()] = (byte) 0xFF;
            service.apply(fe);
            service.apply(ff);
            assertThat(service.calls())
                    .as("the second key is not a duplicate of the first")
                    .isEqualTo(2);
        });
    }

    @Configuration(proxyBeanMethods = false)
    static class BinaryKeys {
        @Bean
        Service service() {
            return new Service();
        }

        static class Service {
            private int calls;

            int calls() {
                return calls;
            }

            /** The key as bytes, e.g. a Kafka record key or a header value. */
            @Idempotent(key = "#key")
            public void apply(byte[] key) {
                calls++;
            }
        }
    }

    @Test
    void textKeysDecodedFromBytesDifferingOnlyInInvalidUtf8_areRejectedWithTheReason_notTakenForOneKey() {
        runner.withUserConfiguration(TextKeys.class).run(context -> {
            TextKeys.Service service = context.getBean(TextKeys.Service.class);
            String prefix = "k-" + System.nanoTime() + "-";
            byte[] fe = Arrays.copyOf(prefix.getBytes(StandardCharsets.UTF_8), prefix.length() + 1);
            byte[] ff = fe.clone();
            fe[prefix.length()] = (byte) 0xFE;
            ff[prefix.length()] = (byte) 0xFF;
            for (byte[] bytes : List.of(fe, ff)) {
                String decoded = new String(bytes, StandardCharsets.UTF_8); // as a client decodes a header
                assertThatThrownBy(() -> service.apply(decoded))
                        .isInstanceOf(IdempotentRejectedException.class)
                        .hasMessageContaining("U+FFFD");
            }
            assertThat(service.calls()).isZero();
        });
    }

    @Test
    void textKey_isTheKeyItsUtf8BytesStandFor_soItCannotEqualTheHexFormOfOtherBytes() {
        runner.withUserConfiguration(TextKeys.class).run(context -> {
            TextKeys.Service service = context.getBean(TextKeys.Service.class);
            String unique = "b-" + System.nanoTime();
            byte[] binary = Arrays.copyOf(unique.getBytes(StandardCharsets.UTF_8), unique.length() + 1);
            binary[unique.length()] = (byte) 0xFF; // not UTF-8: the key is hex:...ff
            service.applyBytes(binary);
            service.apply("hex:" + HexFormat.of().formatHex(binary));
            assertThat(service.calls())
                    .as("a text key spelled like the hex form of other bytes is another key")
                    .isEqualTo(2);
        });
    }

    @Configuration(proxyBeanMethods = false)
    static class TextKeys {
        @Bean
        Service service() {
            return new Service();
        }

        static class Service {
            private int calls;

            int calls() {
                return calls;
            }

            /** The key as text, e.g. a header a client decoded. */
            @Idempotent(key = "#key")
            public void apply(String key) {
                calls++;
            }

            /** The key as bytes, in the same namespace. */
            @Idempotent(key = "#key")
            public void applyBytes(byte[] key) {
                calls++;
            }
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableTransactionManagement
    static class OtherTransactions {
        @Bean
        DataSourceTransactionManager otherTransactions() {
            return new DataSourceTransactionManager(OTHER.dataSource());
        }

        @Bean
        Service service() {
            return new Service();
        }

        static class Service {
            private int calls;

            int calls() {
                return calls;
            }

            @Idempotent(key = "#key")
            public void apply(String key) {
                calls++;
            }
        }
    }

    /** Spring transactions on the application's DataSource, the inbox's own. */
    @Configuration(proxyBeanMethods = false)
    @EnableTransactionManagement
    static class DataSourceTransactions {
        @Bean
        DataSourceTransactionManager transactionManager(DataSource ds) {
            return new DataSourceTransactionManager(ds);
        }
    }

    @Test
    void idempotentMethod_inAReadOnlyTransaction_isRefusedWithTheFixBeforeItRuns() {
        runner.withUserConfiguration(ReadOnlyTransactions.class).run(context -> {
            ReadOnlyTransactions.Service service = context.getBean(ReadOnlyTransactions.Service.class);
            assertThatThrownBy(() -> service.apply("read-only-" + System.nanoTime()))
                    .isInstanceOf(ConfigurationException.class)
                    .hasMessageContaining("readOnly");
            assertThat(service.calls()).isZero();
        });
    }

    @Configuration(proxyBeanMethods = false)
    @Import(DataSourceTransactions.class)
    static class ReadOnlyTransactions {
        @Bean
        Service service() {
            return new Service();
        }

        static class Service {
            private int calls;

            int calls() {
                return calls;
            }

            @Transactional(readOnly = true)
            @Idempotent(key = "#key")
            public void apply(String key) {
                calls++;
            }
        }
    }

    @Test
    void keyExpression_whoseMethodThrows_isRejectedWithoutRunningTheMethod_andOnlyItsElementOfABatch() {
        runner.withUserConfiguration(ThrowingKeys.class).run(context -> {
            ThrowingKeys.Service service = context.getBean(ThrowingKeys.Service.class);
            assertThatThrownBy(() -> service.apply(new Message(null)))
                    .isInstanceOf(IdempotentRejectedException.class)
                    .hasMessageContaining("the message has no id");
            assertThat(service.applied()).isEmpty();
            String good = "good-" + System.nanoTime();
            assertThatThrownBy(() -> service.applyAll(List.of(new Message(good), new Message(null))))
                    .isInstanceOf(BatchListenerFailedException.class)
                    .satisfies(e -> assertThat(((BatchListenerFailedException) e).getIndex())
                            .isEqualTo(1))
                    .hasRootCauseInstanceOf(IllegalArgumentException.class);
            assertThat(service.applied()).containsExactly(good);
        });
    }

    /** A payload whose id accessor throws when the id is missing, as generated or validating accessors do. */
    public record Message(@Nullable String id) {
        public String key() {
            if (id == null) {
                throw new IllegalArgumentException("the message has no id");
            }
            return id;
        }
    }

    @Configuration(proxyBeanMethods = false)
    @Import(DataSourceTransactions.class)
    static class ThrowingKeys {
        @Bean
        Service service() {
            return new Service();
        }

        static class Service {
            private final List<String> applied = new ArrayList<>();

            List<String> applied() {
                return applied;
            }

            @Idempotent(key = "#message.key()")
            public void apply(Message message) {
                applied.add(message.key());
            }

            @Transactional
            @IdempotentBatch(key = "#element.key()")
            public void applyAll(List<Message> messages) {
                messages.forEach(m -> applied.add(m.key()));
            }
        }
    }

    @Test
    void idempotentFinalMethod_whichTheProxyCannotIntercept_failsTheStartupWithTheFix() {
        runner.withBean(FinalMethod.class)
                .run(context -> assertThat(context)
                        .getFailure()
                        .rootCause()
                        .hasMessageContaining(FinalMethod.class.getName() + ".apply")
                        .hasMessageContaining("final"));
    }

    @Test
    void idempotentPrivateMethod_failsTheStartupWithTheFix() {
        runner.withBean(PrivateMethod.class)
                .run(context -> assertThat(context)
                        .getFailure()
                        .rootCause()
                        .hasMessageContaining(PrivateMethod.class.getName() + ".apply")
                        .hasMessageContaining("private"));
    }

    @Test
    void aJdkProxyBean_whoseInterfaceIsIdempotent_startsItsFinalProxyMethodsAreNotTheUsers() {
        Payments proxy = (Payments) java.lang.reflect.Proxy.newProxyInstance(
                Payments.class.getClassLoader(), new Class<?>[] {Payments.class}, (p, method, args) -> null);
        runner.withBean(Payments.class, () -> proxy)
                .run(context -> assertThat(context).hasNotFailed().hasSingleBean(Payments.class));
    }

    /** An interface implemented by a JDK proxy (a client, a repository) whose methods are final. */
    public interface Payments {
        @Idempotent(key = "#key")
        void pay(String key);
    }

    static class FinalMethod {
        @Idempotent(key = "#key")
        public final void apply(String key) {}
    }

    static class PrivateMethod {
        @Idempotent(key = "#key")
        private void apply(String key) {}

        @Idempotent(key = "#key")
        public void applyPublic(String key) {
            apply(key);
        }
    }
}
