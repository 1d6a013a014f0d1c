package dev.idem.bench.e2e;

import dev.idem.Guard;
import dev.idem.HandlingContext;
import dev.idem.Outcome;
import dev.idem.StateMachine;
import dev.idem.bench.e2e.Contender.Answer;
import dev.idem.bench.e2e.Workload.Delivery;
import dev.idem.bench.e2e.Workload.Payment;
import dev.idem.jdbc.Assignments;
import dev.idem.jdbc.JdbcInbox;
import dev.idem.jdbc.JdbcStore;
import dev.idem.jdbc.OwnTransaction;
import dev.idem.jdbc.StateMachineGuard;
import dev.idem.jdbc.UniqueRowGuard;
import dev.idem.spi.IdempotencyStore;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** The contenders that need only the database: the baselines and Idem's JDBC guards. */
final class JdbcContenders {
    private JdbcContenders() {}

    static final String NAMESPACE = "payments";

    /** No guard: every delivery runs the business transaction; every duplicate charges again. */
    static Contender noGuard() {
        return new Simple("no-guard", "no guard (ceiling; applies every duplicate)", env -> batch -> {
            Delivery d = batch.get(0);
            Bank bank = env.bank();
            try {
                bank.inTransaction(c -> {
                    bank.debit(c, d);
                    return null;
                });
            } catch (Faults.HandlerFailure e) {
                return List.of(Answer.RETRY);
            }
            bank.crashAfterCommitIfAsked(d);
            return List.of(Answer.ACK);
        });
    }

    /** The hand-written limit: a dedup insert and the business writes in one transaction, one message each. */
    static Contender handWritten() {
        return new Simple("hand", "hand-written: dedup insert + business update in one transaction", env -> batch -> {
            Delivery d = batch.get(0);
            Bank bank = env.bank();
            boolean applied;
            try {
                applied = bank.inTransaction(c -> {
                    if (!bank.insertProcessed(c, d.key())) {
                        return false;
                    }
                    bank.debit(c, d);
                    return true;
                });
            } catch (Faults.HandlerFailure e) {
                return List.of(Answer.RETRY);
            } catch (SQLException e) {
                if (Bank.isDeadlock(e)) {
                    return List.of(Answer.RETRY);
                }
                throw e;
            }
            if (applied) {
                bank.crashAfterCommitIfAsked(d);
            }
            return List.of(Answer.ACK);
        });
    }

    /**
     * The hand-written limit batched, as a careful engineer writes it: one transaction per batch that first claims
     * every distinct key of the batch with ONE multi-row insert in sorted order ({@link Bank#insertProcessedAll}:
     * {@code ON CONFLICT DO NOTHING RETURNING id} on PostgreSQL, {@code INSERT IGNORE … RETURNING id} on MariaDB), then
     * sends the business statements of the keys that were new as two JDBC batches ({@link Bank#debitAll}: the debits
     * in account order, the ledger rows) and commits once. A failing message
     * rolls the transaction back and the batch runs again without it (it is redelivered); a deadlock (only possible
     * on the account rows now) runs the batch again.
     */
    static Contender handWrittenBatch(int size) {
        return new Simple(
                "hand-batch",
                "hand-written: the same, " + size
                        + " messages per transaction (one sorted multi-row dedup insert, business writes as JDBC"
                        + " batches)",
                size,
                env -> batch -> {
                    Bank bank = env.bank();
                    Map<String, Integer> firsts = new LinkedHashMap<>();
                    for (int i = 0; i < batch.size(); i++) {
                        firsts.putIfAbsent(batch.get(i).key(), i);
                    }
                    Set<Integer> failed = new HashSet<>();
                    for (int attempt = 0; attempt < 20; attempt++) {
                        int[] current = {-1};
                        List<Integer> applied;
                        try {
                            applied = bank.inTransaction(c -> {
                                List<String> keys = new ArrayList<>();
                                firsts.forEach((key, i) -> {
                                    if (!failed.contains(i)) {
                                        keys.add(key);
                                    }
                                });
                                Collections.sort(keys);
                                Set<String> fresh = bank.insertProcessedAll(c, keys);
                                List<Integer> done = new ArrayList<>();
                                List<Delivery> debits = new ArrayList<>();
                                for (int i : firsts.values()) {
                                    Delivery d = batch.get(i);
                                    if (!failed.contains(i) && fresh.contains(d.key())) {
                                        current[0] = i;
                                        bank.failIfAsked(c, d);
                                        debits.add(d);
                                        done.add(i);
                                    }
                                }
                                bank.debitAll(c, debits);
                                return done;
                            });
                        } catch (Faults.HandlerFailure e) {
                            failed.add(current[0]);
                            continue;
                        } catch (SQLException e) {
                            if (Bank.isDeadlock(e)) {
                                continue;
                            }
                            throw e;
                        }
                        for (int i : applied) {
                            bank.crashAfterCommitIfAsked(batch.get(i));
                        }
                        Answer[] answers = new Answer[batch.size()];
                        for (int i = 0; i < batch.size(); i++) {
                            int first = firsts.get(batch.get(i).key());
                            answers[i] = failed.contains(first) ? Answer.RETRY : Answer.ACK;
                        }
                        return Arrays.asList(answers);
                    }
                    return new ArrayList<>(Collections.nCopies(batch.size(), Answer.RETRY));
                });
    }

    /** Idem's transactional record, one message per transaction. */
    static Contender inbox() {
        return new Simple("idem-inbox", "Idem transactional record (`JdbcInbox.handle`)", env -> {
            Bank bank = env.bank();
            JdbcInbox inbox = JdbcInbox.builder(bank.dataSource())
                    .namespace(NAMESPACE)
                    .createTableIfMissing(true)
                    .build();
            return batch -> {
                Delivery d = batch.get(0);
                Outcome outcome = inbox.handle(dev.idem.Delivery.of(d.key()), c -> {
                    bank.debit(c, d);
                    return Outcome.processed();
                });
                if (outcome.type() == Outcome.Type.PROCESSED) {
                    bank.crashAfterCommitIfAsked(d);
                }
                return List.of(Answer.of(outcome));
            };
        });
    }

    /** Idem's transactional record, a batch per transaction. */
    static Contender inboxBatch(int size) {
        return new Simple(
                "idem-inbox-batch",
                "Idem transactional record batched (`handleBatch`, " + size + " per transaction)",
                size,
                env -> {
                    Bank bank = env.bank();
                    JdbcInbox inbox = JdbcInbox.builder(bank.dataSource())
                            .namespace(NAMESPACE)
                            .createTableIfMissing(true)
                            .build();
                    return batch -> {
                        List<dev.idem.Delivery> deliveries = batch.stream()
                                .map(d -> dev.idem.Delivery.of(d.key()))
                                .toList();
                        List<Outcome> outcomes = inbox.handleBatch(deliveries, (c, fresh) -> {
                            List<Delivery> debits = new ArrayList<>(fresh.size());
                            for (HandlingContext context : fresh) {
                                Delivery d = batch.get(context.index());
                                bank.failIfAsked(c, d);
                                debits.add(d);
                            }
                            bank.debitAll(c, debits);
                            return Collections.nCopies(fresh.size(), Outcome.processed());
                        });
                        List<Answer> answers = new ArrayList<>(batch.size());
                        for (int i = 0; i < batch.size(); i++) {
                            if (outcomes.get(i).type() == Outcome.Type.PROCESSED) {
                                bank.crashAfterCommitIfAsked(batch.get(i));
                            }
                            answers.add(Answer.of(outcomes.get(i)));
                        }
                        return answers;
                    };
                });
    }

    /** The state-machine guard: the payment row goes PENDING → PAID in the business transaction. */
    static Contender stateMachine() {
        StateMachine lifecycle = StateMachine.builder()
                .states("PENDING", "PAID")
                .initial("PENDING")
                .transition("PAY", "PENDING", "PAID")
                .build();
        StateMachineGuard payments =
                StateMachineGuard.builder(lifecycle).table("payment").build();
        return new Simple(
                "idem-state-machine", "Idem state-machine guard (`StateMachineGuard`, PENDING → PAID)", env -> {
                    Bank bank = env.bank();
                    OwnTransaction own = OwnTransaction.of(bank.dataSource());
                    return batch -> {
                        Delivery d = batch.get(0);
                        Outcome outcome =
                                own.run(c -> payments.apply(c, d.payment().id(), "PAY", Assignments.of(), c2 -> {
                                    bank.debit(c2, d);
                                    return Outcome.processed();
                                }));
                        if (outcome.type() == Outcome.Type.PROCESSED) {
                            bank.crashAfterCommitIfAsked(d);
                        }
                        return List.of(Answer.of(outcome));
                    };
                });
    }

    /**
     * Idem's JDBC lease store behind a Guard, its claim completed in the business transaction ({@link
     * JdbcStore#completeInTransaction}): the same business writes as Camel's (the debit and its ledger row), the
     * completion committed with them. A consumer that dies after its commit leaves the claim done; one that outlived its
     * lease cannot commit over a takeover (the completion finds the claim no longer its own and rolls the effect back).
     */
    static Contender jdbcLease() {
        return new Simple(
                "idem-jdbc-lease",
                "Idem JDBC lease store (`Guard` + `JdbcStore`, completed in the business transaction)",
                env -> {
                    JdbcStore store = JdbcStore.builder(env.bank().dataSource())
                            .createTableIfMissing(true)
                            .build();
                    return leaseSession(env, store, (c, d, context) -> {
                        env.bank().debit(c, d);
                        return store.completeInTransaction(c, context, Outcome.processed());
                    });
                });
    }

    /** The business transaction of one delivery under a lease store's claim. */
    interface LeaseWork {
        Outcome apply(Connection c, Delivery d, HandlingContext context) throws Exception;
    }

    /**
     * A Guard on a lease store around the business transaction; the ledger row, unique per payment, is written first
     * by a {@link UniqueRowGuard}, so a redelivery that takes over the claim of a consumer that died after its commit
     * finds the effect done.
     */
    static Contender.Session leaseSession(Contender.Env env, IdempotencyStore store) {
        Bank bank = env.bank();
        UniqueRowGuard ledger = UniqueRowGuard.builder()
                .table("ledger_unique")
                .uniqueKey("payment_id")
                .build();
        return leaseSession(env, store, (c, d, context) -> {
            Payment p = d.payment();
            return ledger.insertOnce(
                    c, Map.of("payment_id", p.id(), "account_id", p.account(), "amount", p.amount()), c2 -> {
                        bank.debitAccount(c2, d);
                        return Outcome.processed();
                    });
        });
    }

    /**
     * A Guard on a lease store around {@code work}, run in an {@link OwnTransaction}; a crash after the commit is
     * injected where the run asks for it. Guard settings: lease from the run, in-progress copies wait up to 1 s.
     */
    private static Contender.Session leaseSession(Contender.Env env, IdempotencyStore store, LeaseWork work) {
        Bank bank = env.bank();
        Guard guard = Guard.builder(bank.faults().crashable(store))
                .namespace(NAMESPACE)
                .lease(env.lease())
                .waitForInProgress(Duration.ofSeconds(1))
                .build();
        // built once, as users do: a new one per message borrowed a second pooled connection to detect the database
        OwnTransaction own = OwnTransaction.of(bank.dataSource());
        return new Contender.Session() {
            @Override
            public List<Answer> deliver(List<Delivery> batch) {
                Delivery d = batch.get(0);
                Outcome outcome = guard.handle(dev.idem.Delivery.of(d.key()), context -> {
                    Outcome applied = own.run(c -> work.apply(c, d, context));
                    if (applied.type() == Outcome.Type.PROCESSED) {
                        bank.crashAfterCommitIfAsked(d);
                    }
                    return applied;
                });
                return List.of(Answer.of(outcome));
            }

            @Override
            public void close() {
                guard.close();
                store.close();
            }
        };
    }

    /** A contender from a session factory. */
    static final class Simple implements Contender {
        interface Opener {
            Session open(Env env) throws Exception;
        }

        private final String id;
        private final String label;
        private final int batchSize;
        private final boolean redis;
        private final String ledger;
        private final Opener opener;

        Simple(String id, String label, Opener opener) {
            this(id, label, 1, opener);
        }

        Simple(String id, String label, int batchSize, Opener opener) {
            this(id, label, batchSize, false, "ledger", opener);
        }

        Simple(String id, String label, int batchSize, boolean redis, String ledger, Opener opener) {
            this.id = id;
            this.label = label;
            this.batchSize = batchSize;
            this.redis = redis;
            this.ledger = ledger;
            this.opener = opener;
        }

        @Override
        public String id() {
            return id;
        }

        @Override
        public String label() {
            return label;
        }

        @Override
        public int batchSize() {
            return batchSize;
        }

        @Override
        public boolean needsRedis() {
            return redis;
        }

        @Override
        public String ledgerTable() {
            return ledger;
        }

        @Override
        public Session open(Env env) throws Exception {
            return opener.open(env);
        }
    }
}
