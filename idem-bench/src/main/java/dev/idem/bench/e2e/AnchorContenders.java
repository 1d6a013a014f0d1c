package dev.idem.bench.e2e;

import dev.idem.bench.e2e.Contender.Answer;
import dev.idem.bench.e2e.Workload.Delivery;
import java.sql.SQLException;
import java.util.List;
import org.apache.camel.processor.idempotent.jdbc.JdbcMessageIdRepository;
import org.springframework.integration.jdbc.metadata.JdbcMetadataStore;
import org.springframework.integration.selector.MetadataStoreSelector;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.messaging.support.GenericMessage;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Apache Camel's and Spring Integration's JDBC idempotent consumers, configured as their documentation shows, driven
 * the way their endpoints drive them (their real classes; only the route or endpoint around them is left out).
 */
final class AnchorContenders {
    private AnchorContenders() {}

    /**
     * Camel's {@code idempotentConsumer(header, JdbcMessageIdRepository)} with its defaults, eager and
     * removeOnFailure: {@code add(key)} before the processor (false: a duplicate, skipped and acked), the processor,
     * then {@code confirm(key)}; a processor that throws makes Camel {@code remove(key)}. The repository uses its own
     * {@code TransactionTemplate} on the DataSource (what its {@code (DataSource, processorName)} constructor builds),
     * so its mark commits before the business transaction starts.
     */
    static Contender camel() {
        return new JdbcContenders.Simple(
                "camel-jdbc", "Camel `JdbcMessageIdRepository` (eager, removeOnFailure)", env -> {
                    Bank bank = env.bank();
                    JdbcMessageIdRepository repository =
                            new JdbcMessageIdRepository(bank.dataSource(), JdbcContenders.NAMESPACE);
                    repository.start(); // creates CAMEL_MESSAGEPROCESSED if missing (createTableIfNotExists)
                    return new Contender.Session() {
                        @Override
                        public List<Answer> deliver(List<Delivery> batch) throws Exception {
                            Delivery d = batch.get(0);
                            boolean fresh;
                            try {
                                fresh = repository.add(d.key());
                            } catch (RuntimeException e) {
                                return List.of(Answer.RETRY); // the exchange fails; the broker redelivers
                            }
                            if (!fresh) {
                                return List.of(Answer.ACK);
                            }
                            try {
                                bank.inTransaction(c -> {
                                    bank.debit(c, d);
                                    return null;
                                });
                            } catch (Faults.HandlerFailure | SQLException e) {
                                repository.remove(d.key());
                                return List.of(Answer.RETRY);
                            }
                            bank.crashAfterCommitIfAsked(d);
                            repository.confirm(d.key());
                            return List.of(Answer.ACK);
                        }

                        @Override
                        public void close() {
                            repository.stop();
                        }
                    };
                });
    }

    /**
     * Spring Integration's idempotent receiver: a {@link MetadataStoreSelector} on a {@link JdbcMetadataStore}
     * (table from the shipped {@code schema-*.sql}); {@code accept} is its {@code putIfAbsent}; a rejected message is
     * discarded (acked). The store's writes are not part of the business transaction, and nothing removes a mark when
     * the handler fails (Spring Integration has no failure hook for it). On a pool that hands out connections with
     * auto-commit off, {@code accept} runs in a {@code TransactionTemplate} of its own (the store's {@code
     * JdbcTemplate} would never commit otherwise).
     */
    static Contender springIntegration() {
        return new JdbcContenders.Simple(
                "si-jdbc", "Spring Integration `JdbcMetadataStore` (idempotent receiver, `putIfAbsent`)", env -> {
                    Bank bank = env.bank();
                    JdbcMetadataStore store = new JdbcMetadataStore(bank.dataSource());
                    store.afterPropertiesSet();
                    store.start();
                    MetadataStoreSelector selector =
                            new MetadataStoreSelector(message -> ((Delivery) message.getPayload()).key(), store);
                    TransactionTemplate ownTransaction = bank.autoCommitPool()
                            ? null
                            : new TransactionTemplate(new DataSourceTransactionManager(bank.dataSource()));
                    return new Contender.Session() {
                        @Override
                        public List<Answer> deliver(List<Delivery> batch) throws Exception {
                            Delivery d = batch.get(0);
                            boolean accepted;
                            try {
                                GenericMessage<Delivery> message = new GenericMessage<>(d);
                                accepted = ownTransaction == null
                                        ? selector.accept(message)
                                        : Boolean.TRUE.equals(
                                                ownTransaction.execute(status -> selector.accept(message)));
                            } catch (RuntimeException e) {
                                return List.of(Answer.RETRY);
                            }
                            if (!accepted) {
                                return List.of(Answer.ACK); // discardChannel: the duplicate is dropped
                            }
                            try {
                                bank.inTransaction(c -> {
                                    bank.debit(c, d);
                                    return null;
                                });
                            } catch (Faults.HandlerFailure | SQLException e) {
                                return List.of(Answer.RETRY);
                            }
                            bank.crashAfterCommitIfAsked(d);
                            return List.of(Answer.ACK);
                        }

                        @Override
                        public void close() {
                            store.stop();
                        }
                    };
                });
    }
}
