package dev.idem.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class TimestampsTest {
    @ParameterizedTest
    @ValueSource(
            longs = {
                0,
                1,
                10,
                100,
                999,
                1000,
                59_999,
                86_399_999,
                86_400_000,
                951_782_400_000L,
                1_796_601_600_000L,
                1_796_601_600_120L,
                253_402_300_799_999L,
                253_402_300_800_000L,
                -1,
                -86_400_001L,
                Long.MAX_VALUE / 1000
            })
    void writesWhatInstantWrites(long epochMilli) {
        assertThat(Timestamps.iso(epochMilli))
                .isEqualTo(Instant.ofEpochMilli(epochMilli).toString());
    }

    @Test
    void writesWhatInstantWrites_overFourDigitYears() {
        SplittableRandom random = new SplittableRandom(24);
        for (int i = 0; i < 200_000; i++) {
            long epochMilli = random.nextLong(253_402_300_800_000L);
            assertThat(Timestamps.iso(epochMilli))
                    .isEqualTo(Instant.ofEpochMilli(epochMilli).toString());
        }
    }

    @Test
    void anInstantFinerThanMilliseconds_keepsItsFraction() {
        Instant instant = Instant.ofEpochSecond(1_796_601_600L, 123_456_789);
        assertThat(Timestamps.iso(instant)).isEqualTo("2026-12-07T00:00:00.123456789Z");
        assertThat(Timestamps.iso(Instant.ofEpochSecond(1_796_601_600L, 5_000_000)))
                .isEqualTo("2026-12-07T00:00:00.005Z");
    }

    /** Guard prints whatever instant a store answers: one outside the epoch-millisecond range must not throw. */
    @Test
    void anInstantOutsideTheEpochMillisecondRange_printsAsInstantDoes() {
        for (Instant instant : new Instant[] {
            Instant.MIN,
            Instant.ofEpochSecond(Instant.MAX.getEpochSecond()),
            Instant.ofEpochSecond(Long.MAX_VALUE / 1000 + 1),
            Instant.ofEpochSecond(Long.MIN_VALUE / 1000 - 1)
        }) {
            assertThat(Timestamps.iso(instant)).isEqualTo(instant.toString());
        }
    }
}
