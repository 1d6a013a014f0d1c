package dev.idem.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.opentest4j.TestAbortedException;

/**
 * The lookup order of {@link TestServers} (environment variable, default port, private server, skip), with the
 * default port injected: a port this test listens on, or one nobody listens on. Never depends on the shared servers.
 */
class TestServersTest {
    private ServerSocket listening;
    private String closedUrl;
    private String openUrl;
    private final CountingFallback fallback = new CountingFallback(Optional.empty());

    @BeforeEach
    void ports() throws IOException {
        listening = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        openUrl = "redis://127.0.0.1:" + listening.getLocalPort();
        int closed;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closed = s.getLocalPort();
        }
        closedUrl = "redis://127.0.0.1:" + closed;
    }

    @AfterEach
    void close() throws IOException {
        listening.close();
    }

    @Test
    void envVarSet_andAnswering_isUsed_whateverTheDefault() {
        TestServers.Server server = TestServers.find("Redis", "IDEM_REDIS_URL", openUrl, closedUrl, fallback);

        assertThat(server.url()).isEqualTo(openUrl);
        assertThat(server.port()).isEqualTo(listening.getLocalPort());
        assertThat(fallback.starts).hasValue(0);
    }

    @Test
    void envVarSet_butNotAnswering_isUnavailable_withoutFallingBack() {
        assertThatThrownBy(() -> TestServers.find("Redis", "IDEM_REDIS_URL", closedUrl, openUrl, fallback))
                .isInstanceOfAny(TestAbortedException.class, IllegalStateException.class)
                .hasMessageContaining("(from IDEM_REDIS_URL)");
        assertThat(fallback.starts).hasValue(0);
    }

    @Test
    void noEnvVar_andDefaultPortAnswering_usesTheDefault() {
        TestServers.Server server = TestServers.find("Redis", "IDEM_REDIS_URL", " ", openUrl, fallback);

        assertThat(server.url()).isEqualTo(openUrl);
        assertThat(fallback.starts).hasValue(0);
    }

    @Test
    void noEnvVar_andDefaultPortSilent_usesThePrivateServer() {
        TestServers.Server server = TestServers.find("Redis", "IDEM_REDIS_URL", null, closedUrl, fallback);

        assertThat(server.url()).isEqualTo("redis://127.0.0.1:1");
        assertThat(fallback.starts).hasValue(1);
    }

    @Test
    void noEnvVar_defaultPortSilent_andNoBinaries_isUnavailable_namingBothReasons() {
        CountingFallback missing = new CountingFallback(Optional.of("/usr/bin/redis-server is missing"));

        assertThatThrownBy(() -> TestServers.find("Redis", "IDEM_REDIS_URL", null, closedUrl, missing))
                .isInstanceOfAny(TestAbortedException.class, IllegalStateException.class)
                .hasMessageContaining("not reachable at 127.0.0.1:")
                .hasMessageContaining("set IDEM_REDIS_URL")
                .hasMessageContaining("/usr/bin/redis-server is missing");
        assertThat(missing.starts).hasValue(0);
    }

    @Test
    void noEnvVar_andNoFallbackForTheKind_isUnavailable() {
        assertThatThrownBy(() -> TestServers.find("NATS", "IDEM_NATS_URL", null, closedUrl, null))
                .isInstanceOfAny(TestAbortedException.class, IllegalStateException.class)
                .hasMessageContaining("NATS is not reachable");
    }

    @Test
    void sharedPrivateServer_startsOnce_answers_andReportsAFailedStartToEveryCaller() {
        AtomicInteger starts = new AtomicInteger();
        PrivateServer redis = PrivateServer.redis();
        try {
            var shared = new TestServers.SharedPrivateServer(Optional::empty, () -> {
                starts.incrementAndGet();
                return redis;
            });

            TestServers.Server first = TestServers.find("Redis", "IDEM_REDIS_URL", null, closedUrl, shared);
            TestServers.Server second = TestServers.find("Redis", "IDEM_REDIS_URL", null, closedUrl, shared);

            assertThat(first).isEqualTo(second).isEqualTo(redis.server());
            assertThat(TestServers.answers(first.host(), first.port())).isTrue();
            assertThat(starts).hasValue(1);
        } finally {
            redis.close();
        }

        var broken = new TestServers.SharedPrivateServer(Optional::empty, () -> {
            starts.incrementAndGet();
            throw new IllegalStateException("initdb exited with 1");
        });
        for (int call = 0; call < 2; call++) {
            assertThatThrownBy(() -> TestServers.find("PostgreSQL", "IDEM_PG_URL", null, closedUrl, broken))
                    .isInstanceOfAny(TestAbortedException.class, IllegalStateException.class)
                    .hasMessageContaining("the private server did not start: initdb exited with 1");
        }
        assertThat(starts).hasValue(2);
    }

    /** A fallback that counts its starts and hands out a fixed server. */
    private static final class CountingFallback implements TestServers.Fallback {
        final AtomicInteger starts = new AtomicInteger();
        private final Optional<String> missing;

        CountingFallback(Optional<String> missing) {
            this.missing = missing;
        }

        @Override
        public Optional<String> missing() {
            return missing;
        }

        @Override
        public TestServers.Server server() {
            starts.incrementAndGet();
            return new TestServers.Server("Redis", "redis://127.0.0.1:1", "127.0.0.1", 1);
        }
    }
}
