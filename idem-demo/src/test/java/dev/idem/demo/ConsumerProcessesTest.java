package dev.idem.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ConsumerProcessesTest {
    @TempDir
    Path out;

    /**
     * A copy restarted a moment ago is still starting (on a loaded machine a JVM takes seconds to join): a kill of it
     * tests nothing, so each kill goes to the other copy, the one that joined or is up the longest.
     */
    @Test
    void aKill_goesToACopyThatHadTheTimeToJoin_notToOneJustRestarted() throws Exception {
        try (ConsumerProcesses copies =
                new ConsumerProcesses(new ConsumerCommand("sleep 60"), Map.of(), 2, out, new FaultLog(), 7)) {
            copies.start();
            copies.joinedAfter(Duration.ofMillis(500).toNanos());
            Thread.sleep(600);
            int killed = copies.killOne(": first").orElseThrow();
            for (int kill = 0; kill < 4; kill++) {
                await().atMost(Duration.ofSeconds(10)).until(() -> copies.running() == 2);
                int other = 3 - killed;
                killed = copies.killOne(": next").orElseThrow();
                assertThat(killed).as("kill %d after the first", kill + 1).isEqualTo(other);
            }
        }
    }
}
