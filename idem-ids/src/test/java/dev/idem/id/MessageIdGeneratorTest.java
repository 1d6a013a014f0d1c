package dev.idem.id;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.ConfigurationException;
import dev.idem.RetryLaterException;
import dev.idem.id.IdGenerationException.Reason;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class MessageIdGeneratorTest {
    private static final String T0 = "2024-01-15T14:30:00.123Z";

    @Test
    @Timeout(120)
    void eightThreads_millionIdsEach_areUniqueAndIncreasingPerThread() throws Exception {
        int threads = 8;
        int perThread = 1_000_000;
        MessageIdGenerator generator = MessageIdGenerator.withNodeId(7);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch start = new CountDownLatch(1);
        List<Future<long[]>> results = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            results.add(pool.submit(() -> {
                long[] ids = new long[perThread];
                start.await();
                for (int i = 0; i < perThread; i++) {
                    ids[i] = generator.nextLong();
                }
                return ids;
            }));
        }
        start.countDown();
        long[] all = new long[threads * perThread];
        for (int t = 0; t < threads; t++) {
            long[] ids = results.get(t).get();
            for (int i = 1; i < perThread; i++) {
                if (ids[i] <= ids[i - 1]) {
                    throw new AssertionError(
                            "thread " + t + ": id " + i + " (" + ids[i] + ") is not above " + ids[i - 1]);
                }
            }
            System.arraycopy(ids, 0, all, t * perThread, perThread);
        }
        pool.shutdown();

        Arrays.sort(all);
        for (int i = 1; i < all.length; i++) {
            if (all[i] == all[i - 1]) {
                throw new AssertionError("id " + all[i] + " was issued twice");
            }
        }
        assertThat(generator.format().parse(all[0]).nodeId()).isEqualTo(7);
    }

    @Test
    void idsOfOneMillisecond_countUpTheSequence() {
        SteppingClock clock = SteppingClock.at(T0);
        MessageIdGenerator generator = fixed(clock, MessageIdFormat.defaults());

        long first = generator.nextLong();
        long second = generator.nextLong();
        String third = generator.nextString();

        Instant t0 = Instant.parse(T0);
        assertThat(generator.format().parse(first)).isEqualTo(new ParsedLongId(t0, 1, 0));
        assertThat(generator.format().parse(second)).isEqualTo(new ParsedLongId(t0, 1, 1));
        assertThat(third).isEqualTo("ORDER_20240115143000123_NODE01_0002");
    }

    @Test
    void sequenceUsedUp_waitsForTheNextMillisecond_neverWraps() {
        SteppingClock clock = SteppingClock.at(T0).stepEveryRead(Duration.ofNanos(100_000));
        MessageIdFormat format = MessageIdFormat.builder().sequenceBits(2).build();
        MessageIdGenerator generator = fixed(clock, format);

        long[] ids = new long[400];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = generator.nextLong();
        }

        assertStrictlyIncreasing(ids);
        List<ParsedLongId> parts = Arrays.stream(ids).mapToObj(format::parse).toList();
        assertThat(parts).allSatisfy(p -> assertThat(p.sequence()).isBetween(0, 3));
        // 400 ids at 4 per millisecond took at least 100 milliseconds: the generator waited instead of wrapping.
        assertThat(Duration.between(parts.get(0).timestamp(), parts.get(399).timestamp()))
                .isGreaterThanOrEqualTo(Duration.ofMillis(99));
        assertThat(clock.reads()).isGreaterThan(ids.length);
    }

    @Test
    void clockStepsBackWithinTheBound_isWaitedOut_andNoIdRepeats() {
        SteppingClock clock = SteppingClock.at(T0);
        MessageIdGenerator generator = fixed(clock, MessageIdFormat.defaults());
        long before = generator.nextLong();
        long readsBefore = clock.reads();

        clock.set(Instant.parse(T0).minusMillis(500));
        clock.stepEveryRead(Duration.ofMillis(50));
        long after = generator.nextLong();

        assertThat(after).isGreaterThan(before);
        assertThat(generator.format().parse(after).timestamp()).isAfterOrEqualTo(Instant.parse(T0));
        assertThat(clock.reads() - readsBefore).isGreaterThanOrEqualTo(10);
    }

    @Test
    void clockStepsBackBeyondTheBound_isRefused_untilTheClockCatchesUp() {
        SteppingClock clock = SteppingClock.at(T0);
        MessageIdGenerator generator = fixed(clock, MessageIdFormat.defaults());
        long before = generator.nextLong();

        clock.set(Instant.parse(T0).minusSeconds(5));

        assertThatThrownBy(generator::nextLong)
                .isInstanceOf(IdGenerationException.class)
                .isInstanceOf(RetryLaterException.class)
                .hasMessageContaining("PT5S behind the last id")
                .satisfies(
                        e -> assertThat(((IdGenerationException) e).reason()).isEqualTo(Reason.CLOCK_MOVED_BACKWARDS));
        assertThatThrownBy(generator::nextString).isInstanceOf(IdGenerationException.class);

        clock.set(Instant.parse(T0).plusMillis(1));
        assertThat(generator.nextLong()).isGreaterThan(before);
    }

    @Test
    void clockThatStandsStill_whileTheGeneratorWaits_failsInsteadOfHanging() {
        SteppingClock clock = SteppingClock.at(T0);
        MessageIdFormat format = MessageIdFormat.builder().sequenceBits(1).build();
        MessageIdGenerator generator = MessageIdGenerator.builder()
                .format(format)
                .nodeId(0)
                .clock(clock)
                .maxClockStepBack(Duration.ZERO)
                .build();
        generator.nextLong();
        generator.nextLong();

        assertThatThrownBy(generator::nextLong)
                .isInstanceOf(IdGenerationException.class)
                .hasMessageContaining("is the clock stopped?");
    }

    @Test
    void clockBeforeTheEpoch_isAConfigurationError() {
        SteppingClock clock = SteppingClock.at("2023-06-01T00:00:00Z");
        MessageIdGenerator generator = fixed(clock, MessageIdFormat.defaults());

        assertThatThrownBy(generator::nextLong)
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("before the id epoch");
    }

    @Test
    void clockPastTheLastTimestamp_isAConfigurationError() {
        MessageIdFormat format = MessageIdFormat.builder().timestampBits(20).build();
        SteppingClock clock = SteppingClock.at("2024-01-01T00:17:29Z");
        MessageIdGenerator generator = fixed(clock, format);

        assertThatThrownBy(generator::nextLong)
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("past the last timestamp");
    }

    @Test
    void longAndStringIds_shareOneSequence() {
        SteppingClock clock = SteppingClock.at(T0);
        MessageIdGenerator generator = fixed(clock, MessageIdFormat.defaults());

        long a = generator.nextLong();
        ParsedStringId b = generator.format().parse(generator.nextString("PAY"));
        long c = generator.nextLong();

        assertThat(generator.format().parse(a).sequence()).isZero();
        assertThat(b.sequence()).isEqualTo(1);
        assertThat(b.prefix()).isEqualTo("PAY");
        assertThat(generator.format().parse(c).sequence()).isEqualTo(2);
    }

    @Test
    void closedGenerator_issuesNothing() {
        MessageIdGenerator generator = fixed(SteppingClock.at(T0), MessageIdFormat.defaults());
        generator.close();

        assertThatThrownBy(generator::nextLong)
                .isInstanceOf(IdGenerationException.class)
                .satisfies(e -> assertThat(((IdGenerationException) e).reason()).isEqualTo(Reason.CLOSED));
    }

    @Test
    void builder_needsExactlyOneWayToGetANodeId() {
        assertThatThrownBy(() -> MessageIdGenerator.builder().build())
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("exactly one of .nodeId(n) and .nodeIdLease(store, space)");
        assertThatThrownBy(() -> MessageIdGenerator.builder()
                        .nodeId(1)
                        .nodeIdLease(InMemoryNodeIdLeaseStore.create(), "orders")
                        .build())
                .hasMessageContaining("not both");
    }

    @Test
    void nodeIdOutsideTheNodeBits_isRefused() {
        assertThatThrownBy(() -> MessageIdGenerator.withNodeId(1024))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("does not fit in 10 node bits (0 to 1023)");
        assertThatThrownBy(() -> MessageIdGenerator.builder().nodeId(-1)).isInstanceOf(ConfigurationException.class);
    }

    @Test
    void stringIdWithoutAPrefix_orWithABadOne_isRefused() {
        MessageIdGenerator generator = MessageIdGenerator.withNodeId(1);

        assertThatThrownBy(generator::nextString).hasMessageContaining("has no prefix");
        assertThatThrownBy(() -> generator.nextString("order")).isInstanceOf(ConfigurationException.class);
        assertThatThrownBy(() -> MessageIdGenerator.builder().prefix("ORDER_X"))
                .isInstanceOf(ConfigurationException.class);
    }

    @Property(tries = 200)
    void everyGeneratedId_parsesBackToTheClockNodeAndSequenceThatMadeIt(
            @ForAll @LongRange(min = 0, max = 2_000_000_000_000L) long offsetMillis,
            @ForAll @IntRange(min = 0, max = 1023) int nodeId,
            @ForAll @IntRange(min = 1, max = 50) int count) {
        Instant t = MessageIdFormat.defaults().epoch().plusMillis(offsetMillis);
        SteppingClock clock = SteppingClock.at(t.toString());
        MessageIdGenerator generator = MessageIdGenerator.builder()
                .nodeId(nodeId)
                .prefix("ORDER")
                .clock(clock)
                .build();
        MessageIdFormat format = generator.format();

        for (int i = 0; i < count; i++) {
            ParsedLongId fromLong = format.parse(generator.nextLong());
            assertThat(fromLong).isEqualTo(new ParsedLongId(t, nodeId, 2 * i));
            String text = generator.nextString();
            assertThat(format.parse(text)).isEqualTo(new ParsedStringId("ORDER", t, nodeId, 2 * i + 1));
        }
    }

    private static MessageIdGenerator fixed(SteppingClock clock, MessageIdFormat format) {
        return MessageIdGenerator.builder()
                .format(format)
                .nodeId(1)
                .prefix("ORDER")
                .clock(clock)
                .build();
    }

    static void assertStrictlyIncreasing(long[] ids) {
        for (int i = 1; i < ids.length; i++) {
            if (ids[i] <= ids[i - 1]) {
                throw new AssertionError("id " + i + " (" + ids[i] + ") is not above " + ids[i - 1]);
            }
        }
    }
}
