package dev.idem.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Guard;
import dev.idem.Outcome;
import dev.idem.testsupport.ChildJvm;
import dev.idem.testsupport.TestServers;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A store and a guard first built inside a JVM shutdown hook (a consumer that drains its last messages while the JVM
 * exits): registering their own exit hooks is refused then, and must not make building them fail.
 */
@Timeout(60)
class RedisStoreAtExitTest {
    private static final String PREFIX = TestServers.uniquePrefix("AtExit");

    @TempDir
    Path tmp;

    @AfterAll
    static void deleteKeys() {
        RedisKeys.deleteAll(TestServers.redis().url(), PREFIX);
    }

    @Test
    void aStoreAndAGuardBuiltWhileTheJvmExits_handleAMessage() throws Exception {
        Path log = tmp.resolve("child.log");
        ChildJvm child = ChildJvm.start(
                "HANDLED", HandleAtExit.class, log, TestServers.redis().url(), PREFIX);
        CountDownLatch exited = new CountDownLatch(1);
        child.onExit(status -> exited.countDown());
        try {
            boolean handled = child.awaitSignal(Duration.ofSeconds(40));
            assertThat(exited.await(30, TimeUnit.SECONDS)).isTrue();
            assertThat(handled)
                    .as("the child handled its message (see %s)", Files.readString(log))
                    .isTrue();
        } finally {
            child.kill();
        }
    }

    /** Builds the store and the guard (the guard's class loaded there first) in a shutdown hook, and handles one. */
    public static final class HandleAtExit {
        public static void main(String[] args) {
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                try (RedisStore store = RedisStore.builder(args[0])
                                .prefix(args[1])
                                .armingDelay(Duration.ZERO)
                                .build();
                        Guard guard = Guard.builder(store).namespace("payments").build()) {
                    Outcome outcome = guard.run("pay-1", () -> {});
                    System.out.println("HANDLED " + outcome.type());
                    System.out.flush();
                }
            }));
        }
    }
}
