package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import dev.idem.spi.KeyBytes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * The contract every broker adapter and every Spring integration passes, against its real broker: producer resends,
 * redelivery after a crash before the ack, two copies at once on two consumers, reordering, poison messages, the
 * failure bound, {@code IN_PROGRESS} never dead-lettered, a database that is unreachable or ends every session
 * mid-method for {@link #outage()}, shutdown while a handler runs, hostile headers, an operator's replay from the
 * dead-letter place, keys whose bytes differ only in invalid UTF-8, and consumers starting at the same moment.
 *
 * <p>An adapter's test extends it and says how to make a fresh destination, start a guarded consumer whose handler
 * calls the contract's {@link ContractHandler}, publish, and read and replay the dead-letter place:
 *
 * <pre>{@code
 * class RabbitAdapterContractTest extends AdapterContract {
 *     protected void createDestination(String name) { topology = RabbitTopology.of(name); topology.declare(channel); }
 *     protected RunningConsumer startConsumer(ContractHandler handler, RetryPolicy retryPolicy) {
 *         IdempotentRabbitConsumer c = IdempotentRabbitConsumer.builder(connection(), topology)
 *                 .retryPolicy(retryPolicy)
 *                 .handler((key, message) -> handler.handle(key, message.getBody()))
 *                 .build().start();
 *         return RunningConsumer.of(c::close, c::crash);
 *     }
 *     ...
 * }
 * }</pre>
 *
 * The handler is a user's handler on a transactional database ({@link ContractLedger}): the effect and its mark commit
 * together, a second handling of a key held by a running one answers {@code IN_PROGRESS}, and the payload scripts
 * what it does. {@link ContractLedger#effects(String)} is the verdict: 1 is exactly once. Every test has a fresh
 * destination and a fresh ledger.
 *
 * <p>The scenarios share nothing but the broker: a test that starts each scenario's consumers for that scenario alone
 * (its own clients, or its own listener containers in an application the scenarios share) may run them concurrently,
 * annotated {@code @Execution(ExecutionMode.CONCURRENT)} with JUnit's parallel execution enabled
 * ({@code junit.jupiter.execution.parallel.enabled=true}).
 */
public abstract class AdapterContract {
    /**
     * The retry policy every consumer of the contract runs with: 10 attempts, 20 ms doubling to 200 ms, no jitter. Its
     * whole bound (about 1.3 s) leaves a "create" published after the "cancel" time to arrive on a loaded machine.
     */
    public static final RetryPolicy RETRY_POLICY = RetryPolicy.builder()
            .initialDelay(Duration.ofMillis(20))
            .multiplier(2)
            .maxDelay(Duration.ofMillis(200))
            .maxAttempts(10)
            .jitter(0)
            .build();

    /** The handler's database; fresh for every test. */
    protected final ContractLedger ledger = new ContractLedger();

    private final ContractWaits waits = new ContractWaits(this::deadLetters, ledger, RETRY_POLICY);

    private final List<RunningConsumer> consumers = new CopyOnWriteArrayList<>();
    private String destination = "";

    /** What the consumer started by {@link #startConsumer} calls for every message it read a key from. */
    @FunctionalInterface
    public interface ContractHandler {
        /** The outcome of handling the message keyed {@code key} with body {@code payload}; may throw as handlers do. */
        Outcome handle(String key, byte[] payload) throws Exception;
    }

    /** A guarded consumer an adapter's test started. */
    public interface RunningConsumer {
        /** Shuts down as the application does: handlers that run may end, and their messages are settled. */
        void stop() throws Exception;

        /**
         * Dies as a killed process does: from now on nothing is acknowledged, committed, retried or dead-lettered by
         * it, and what it held goes back to the broker (e.g. its connection is cut, its consumer closed without
         * committing).
         */
        void crash() throws Exception;

        /** A consumer whose {@code stop} and {@code crash} are the given actions. */
        static RunningConsumer of(Action stop, Action crash) {
            return new RunningConsumer() {
                @Override
                public void stop() throws Exception {
                    stop.run();
                }

                @Override
                public void crash() throws Exception {
                    crash.run();
                }
            };
        }
    }

    /** A stop or crash action. */
    @FunctionalInterface
    public interface Action {
        void run() throws Exception;
    }

    /**
     * A message in the dead-letter place.
     *
     * @param key the idempotency key as the adapter read it (its exact form, see {@link KeyBytes}), or null when the
     *     message had none
     * @param reason the reason the adapter recorded with it
     */
    public record DeadLetter(@Nullable String key, String reason) {}

    /** Makes a fresh destination named after {@code name} (topic, queue, subject) with its retry and dead-letter places. */
    protected abstract void createDestination(String name) throws Exception;

    /**
     * Starts a guarded consumer of the current destination that calls {@code handler} with each message's key and body
     * and settles the answer (or what it threw) as the adapter does, with {@code retryPolicy}. May be called from
     * several threads at once.
     */
    protected abstract RunningConsumer startConsumer(ContractHandler handler, RetryPolicy retryPolicy) throws Exception;

    /** Publishes {@code message} to the current destination as the adapter's producers do. */
    protected abstract void publish(TestMessage message) throws Exception;

    /** Every message the dead-letter place of the current destination took so far (not only those still in it). */
    protected abstract List<DeadLetter> deadLetters() throws Exception;

    /**
     * Publishes every message of the dead-letter place back to the destination, as an operator's tool does: with the
     * headers or properties the dead-letter copy carries (the broker's dead-letter history, the adapter's own).
     */
    protected abstract void replayDeadLetters() throws Exception;

    /**
     * Headers or properties a hostile or careless producer sets: the adapter's own header names with values that
     * would skip or dead-letter the message, the broker's routing headers, a dead-letter history naming the
     * destination. A message carrying them is handled as if it had none.
     */
    protected abstract Map<String, byte[]> hostileHeaders();

    /**
     * Whether the broker carries a key's bytes as they are (byte headers: Kafka, RabbitMQ). Where keys travel as text
     * that the broker or its client decodes from UTF-8 (RocketMQ properties), bytes that are not UTF-8 arrive as U+FFFD
     * and two keys differing only there arrive equal: the adapter must dead-letter each with a reason naming UTF-8,
     * never apply one and take the other for its duplicate. Default true.
     */
    protected boolean carriesKeyBytes() {
        return true;
    }

    /** Called after each test, once its consumers are stopped: delete what {@link #createDestination} made. */
    protected void deleteDestination() throws Exception {}

    /**
     * How long the database stays unreachable (or ends every session) in the outage cases: 5 s by default, almost four
     * times the whole bound of {@link #RETRY_POLICY} (and the case also waits until every key reached was tried beyond
     * it); {@code -Didem.contract.outage=PT60S} runs a 60 s outage.
     */
    protected Duration outage() {
        return Optional.ofNullable(System.getProperty("idem.contract.outage"))
                .map(Duration::parse)
                .orElse(Duration.ofSeconds(5));
    }

    @BeforeEach
    final void freshDestination(TestInfo test) throws Exception {
        destination = test.getTestMethod().map(m -> m.getName()).orElse("contract");
        createDestination(destination);
    }

    @AfterEach
    final void stopConsumers() throws Exception {
        ledger.recover();
        ledger.releaseHolds();
        for (RunningConsumer consumer : consumers) {
            try {
                consumer.stop();
            } catch (Exception e) {
                // a crashed consumer may refuse a stop; the next test starts afresh either way
            }
        }
        consumers.clear();
        deleteDestination();
    }

    /** The name the current test's destination was made from. */
    protected final String destination() {
        return destination;
    }

    // --- the scenarios ---

    @Test
    void producerResend_isAppliedOnce_andEveryCopyIsSettled() throws Exception {
        start();
        publish(TestMessage.of("resent", "apply"));
        publish(TestMessage.of("resent", "apply"));
        publish(TestMessage.of("resent", "apply"));

        waits.untilClean(() -> ledger.calls("resent") >= 3);
        waits.assertSettled();
        assertThat(ledger.effects("resent")).isEqualTo(1);
    }

    @Test
    void crashAfterTheEffect_beforeTheAck_isRedelivered_andADuplicate() throws Exception {
        RunningConsumer first = start();
        publish(TestMessage.of("crashed", "hold-after"));
        waits.untilClean(() -> ledger.holding() == 1);

        first.crash();
        ledger.releaseHolds();
        start();

        waits.untilClean(() -> ledger.calls("crashed") >= 2);
        waits.assertSettled();
        assertThat(ledger.effects("crashed")).isEqualTo(1);
    }

    @Test
    void twoCopiesAtOnce_onTwoConsumers_oneWaitsInProgress_andTheEffectIsOnce() throws Exception {
        start();
        start();
        publish(TestMessage.of("raced", "hold").routedBy("first copy"));
        waits.untilClean(() -> ledger.holding() == 1);
        publish(TestMessage.of("raced", "hold").routedBy("second copy"));

        waits.untilClean(() -> ledger.contended("raced") >= 1);
        ledger.releaseHolds();

        waits.untilClean(() -> ledger.effects("raced") == 1 && ledger.calls("raced") >= 3);
        waits.assertSettled();
        assertThat(ledger.effects("raced")).isEqualTo(1);
    }

    @Test
    void outOfOrder_cancelBeforeCreate_isRetried_untilCreateApplied() throws Exception {
        start();
        // Both routes are consumed before the cancel is sent: its retries then wait for the create only, not also for
        // a consumer to be given the create's partition or queue.
        publish(TestMessage.of("order-0:CANCEL-ROUTE", "apply").routedBy("order-1:CANCEL"));
        publish(TestMessage.of("order-0:CREATE-ROUTE", "apply").routedBy("order-1:CREATE"));
        waits.untilClean(
                () -> ledger.effects("order-0:CANCEL-ROUTE") == 1 && ledger.effects("order-0:CREATE-ROUTE") == 1);
        publish(TestMessage.of("order-1:CANCEL", "needs:order-1:CREATE").routedBy("order-1:CANCEL"));
        waits.untilClean(() -> ledger.calls("order-1:CANCEL") >= 1);
        publish(TestMessage.of("order-1:CREATE", "apply").routedBy("order-1:CREATE"));

        waits.untilClean(() -> ledger.effects("order-1:CANCEL") == 1);
        waits.assertSettled();
        assertThat(ledger.commitOrder()).endsWith("order-1:CREATE", "order-1:CANCEL");
    }

    @Test
    void poison_andAMessageWithoutKey_areDeadLetteredOnce_atOnce_withTheirReasons() throws Exception {
        start();
        publish(TestMessage.of("poison", "reject"));
        publish(new TestMessage(null, TestMessage.bytes("apply"), Map.of(), null));

        waits.until(() -> deadLetters().size() >= 2);
        waits.settle();
        List<DeadLetter> dead = deadLetters();
        assertThat(dead).hasSize(2);
        assertThat(ContractWaits.reasonOf(dead, "poison")).contains("scripted rejection");
        assertThat(dead).anySatisfy(d -> {
            assertThat(d.key()).isNull();
            assertThat(d.reason()).containsIgnoringCase("key");
        });
        assertThat(ledger.calls("poison")).as("rejected at once, never retried").isEqualTo(1);
        assertThat(ledger.effects("poison")).isZero();
    }

    @Test
    void failingHandler_isRetriedToTheBound_thenDeadLetteredOnce_andATransientFailureIsApplied() throws Exception {
        start();
        publish(TestMessage.of("broken", "fail"));
        publish(TestMessage.of("flaky", "fail:2"));

        waits.until(() -> !deadLetters().isEmpty() && ledger.effects("flaky") == 1);
        waits.settle();
        assertThat(deadLetters()).hasSize(1);
        assertThat(ContractWaits.reasonOf(deadLetters(), "broken"))
                .contains("gave up after " + RETRY_POLICY.maxAttempts() + " attempts");
        assertThat(ledger.calls("broken")).isEqualTo(RETRY_POLICY.maxAttempts());
        assertThat(ledger.calls("flaky")).isEqualTo(3);
    }

    @Test
    void inProgress_farBeyondTheAttemptBound_isNeverDeadLettered() throws Exception {
        start();
        ledger.holdFromOutside("held");
        publish(TestMessage.of("held", "apply"));

        waits.untilClean(() -> ledger.contended("held") >= 2 * RETRY_POLICY.maxAttempts());
        ledger.endOutsideHold("held");

        waits.untilClean(() -> ledger.effects("held") == 1);
        waits.assertSettled();
    }

    @Test
    void databaseUnreachable_underTraffic_nothingDeadLettered_everyMessageAppliedOnceAfterwards() throws Exception {
        start();
        ledger.beUnreachable();
        List<String> keys = publishMany("outage", 20);

        waits.untilEachCalledBeyondTheBound(keys, outage());
        ledger.recover();

        waits.untilClean(() -> keys.stream().allMatch(k -> ledger.effects(k) == 1));
        waits.assertSettled();
    }

    @Test
    void databaseEndingEverySessionMidMethod_nothingDeadLettered_everyMessageAppliedOnceAfterwards() throws Exception {
        start();
        ledger.endSessionsMidMethod();
        List<String> keys = publishMany("restart-loop", 20);

        waits.untilEachCalledBeyondTheBound(keys, outage());
        ledger.recover();

        waits.untilClean(() -> keys.stream().allMatch(k -> ledger.effects(k) == 1));
        waits.assertSettled();
    }

    @Test
    void shutdownWhileAHandlerRuns_letsItEnd_uninterrupted_andItsMessageIsAppliedOnce() throws Exception {
        RunningConsumer first = start();
        publish(TestMessage.of("running", "hold"));
        waits.untilClean(() -> ledger.holding() == 1);

        ExecutorService stopper = Executors.newSingleThreadExecutor();
        try {
            Future<?> stopping = stopper.submit(() -> {
                first.stop();
                return null;
            });
            waits.pause(Duration.ofMillis(300));
            ledger.releaseHolds();
            stopping.get(ContractWaits.WAIT.toSeconds(), TimeUnit.SECONDS);
        } finally {
            stopper.shutdownNow();
        }
        consumers.remove(first);
        start();

        waits.untilClean(() -> ledger.effects("running") == 1);
        waits.assertSettled();
        assertThat(ledger.interrupted("running"))
                .as("the shutdown interrupted the handler")
                .isZero();
    }

    @Test
    void hostileHeaders_changeNothing_theMessageIsAppliedOnce_andAFailureGetsItsWholeBound() throws Exception {
        start();
        publish(TestMessage.of("hostile-ok", "apply").withHeaders(hostileHeaders()));
        publish(TestMessage.of("hostile-failing", "fail").withHeaders(hostileHeaders()));

        waits.until(() -> ledger.effects("hostile-ok") == 1 && !deadLetters().isEmpty());
        waits.settle();
        assertThat(deadLetters()).extracting(DeadLetter::key).containsExactly("hostile-failing");
        assertThat(ledger.calls("hostile-failing")).isEqualTo(RETRY_POLICY.maxAttempts());
        assertThat(ledger.calls("hostile-ok")).isEqualTo(1);
    }

    @Test
    void operatorReplay_fromTheDeadLetterPlace_afterTheFix_isAppliedOnce() throws Exception {
        start();
        publish(TestMessage.of("replayed", "fail"));
        waits.until(() -> !deadLetters().isEmpty());

        ledger.fix("replayed");
        replayDeadLetters();

        waits.until(() -> ledger.effects("replayed") == 1);
        waits.settle();
        assertThat(deadLetters()).as("the replay is not dead-lettered again").hasSize(1);
        assertThat(ledger.effects("replayed")).isEqualTo(1);
    }

    @Test
    void keysWhoseBytesDifferOnlyInInvalidUtf8_areTwoKeys_eachAppliedOnce() throws Exception {
        start();
        byte[] fe = {'k', '-', (byte) 0xFE};
        byte[] ff = {'k', '-', (byte) 0xFF};
        publish(new TestMessage(fe, TestMessage.bytes("apply"), Map.of(), null));
        publish(new TestMessage(ff, TestMessage.bytes("apply"), Map.of(), null));

        if (!carriesKeyBytes()) {
            waits.until(() -> deadLetters().size() >= 2);
            waits.settle();
            assertThat(deadLetters())
                    .hasSize(2)
                    .allSatisfy(d -> assertThat(d.reason()).contains("UTF-8"));
            assertThat(ledger.allEffects())
                    .as("neither taken for the other's duplicate")
                    .isEmpty();
            return;
        }
        waits.untilClean(() -> ledger.allEffects().size() == 2);
        waits.assertSettled();
        assertThat(ledger.allEffects())
                .containsOnlyKeys(KeyBytes.exactKey(fe), KeyBytes.exactKey(ff))
                .allSatisfy((key, effects) -> assertThat(effects).isEqualTo(1));
    }

    @Test
    void consumersStartingAtTheSameMoment_allStart_andEveryMessageIsAppliedOnce() throws Exception {
        int count = 4;
        CountDownLatch gate = new CountDownLatch(1);
        ExecutorService starters = Executors.newFixedThreadPool(count);
        try {
            List<Future<RunningConsumer>> started = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                started.add(starters.submit(() -> {
                    gate.await();
                    return startConsumer(this::handle, RETRY_POLICY);
                }));
            }
            gate.countDown();
            for (Future<RunningConsumer> f : started) {
                consumers.add(f.get(ContractWaits.WAIT.toSeconds(), TimeUnit.SECONDS));
            }
        } finally {
            starters.shutdownNow();
        }
        List<String> keys = publishMany("together", 40);

        waits.untilClean(() -> keys.stream().allMatch(k -> ledger.effects(k) == 1));
        waits.assertSettled();
    }

    // --- helpers ---

    /** Starts one more consumer of the current destination with the contract's handler and retry policy. */
    protected final RunningConsumer start() throws Exception {
        RunningConsumer consumer = startConsumer(this::handle, RETRY_POLICY);
        consumers.add(consumer);
        return consumer;
    }

    private Outcome handle(String key, byte[] payload) throws Exception {
        return ledger.handle(key, payload);
    }

    private List<String> publishMany(String prefix, int count) throws Exception {
        List<String> keys =
                IntStream.range(0, count).mapToObj(i -> prefix + "-" + i).toList();
        for (String key : keys) {
            publish(TestMessage.of(key, "apply").routedBy(key));
        }
        return keys;
    }
}
