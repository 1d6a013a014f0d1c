package dev.idem.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class KillNineStormTest {
    @TempDir
    Path dir;

    /**
     * RocketMQ's KillNineTest once had its three consumers end at start (the name server's channel closed under load)
     * and waited 90 s for a debit that no process was left to make.
     */
    @Test
    void aChildThatEndsOnItsOwn_isStartedAgain_aKilledOneOnlyByTheStrike() throws Exception {
        Path marker = dir.resolve("ended-once");
        AtomicInteger starts = new AtomicInteger();
        try (KillNineStorm storm = KillNineStorm.start(1, () -> {
            starts.incrementAndGet();
            return ChildJvm.start(EndsOnceChild.class, dir.resolve("child.log"), marker.toString());
        })) {
            await().atMost(Duration.ofSeconds(60)).until(() -> storm.exitsOfTheirOwn() == 1 && starts.get() == 2);
            assertThat(marker).exists();

            storm.strike(1, Duration.ofMillis(1), Duration.ofMillis(1));
            // Where the killed child's end would have been acted on: its pause, and as long again to act.
            Thread.sleep(KillNineStorm.RESTART_PAUSE.multipliedBy(3).toMillis());
            assertThat(starts)
                    .as("the killed child, started by the strike only")
                    .hasValue(3);
            assertThat(storm.exitsOfTheirOwn()).isEqualTo(1);
        }
    }

    /** Ends with status 3 the first time ({@code args[0]} does not exist yet), runs until killed after that. */
    public static final class EndsOnceChild {
        public static void main(String[] args) throws Exception {
            Path marker = Path.of(args[0]);
            if (!Files.exists(marker)) {
                Files.createFile(marker);
                System.exit(3);
            }
            Thread.sleep(Long.MAX_VALUE);
        }
    }
}
