package dev.idem.testsupport;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Assumptions;

/**
 * Finds the real server an integration test talks to, one rule for all, in this order:
 *
 * <ol>
 *   <li>the environment variable ({@code IDEM_PG_URL}, {@code IDEM_MYSQL_URL}, {@code IDEM_REDIS_URL}, {@code
 *       IDEM_RABBITMQ_URL}, {@code IDEM_NATS_URL}) when it is set: that server or none, never another one;
 *   <li>else the default local port (5432, 3306, 6379, 5672, 4222) if it answers;
 *   <li>else, for PostgreSQL, MariaDB and Redis, a {@link PrivateServer} built from the binaries installed on the
 *       machine: started once per JVM on first need, shared by every test of that JVM, stopped when it exits;
 *   <li>else the test is skipped with the reason printed. With {@code IDEM_REQUIRE_SERVICES=1} (as {@code .ci/run}
 *       sets it) it fails instead.
 * </ol>
 *
 * <p>Databases come isolated per test class through {@link TestDatabase}; Redis keys through {@link
 * #uniquePrefix(String)}.
 */
public final class TestServers {
    private TestServers() {}

    /** A server an integration test can use. {@code url} is in the form its client takes. */
    public record Server(String name, String url, String host, int port) {}

    /** PostgreSQL as a JDBC URL with user, e.g. {@code jdbc:postgresql://127.0.0.1:5432/test?user=postgres}. */
    public static Server postgres() {
        return find(
                "PostgreSQL", "IDEM_PG_URL", "jdbc:postgresql://127.0.0.1:5432/test?user=postgres", Shared.POSTGRES);
    }

    /** MariaDB or MySQL as a JDBC URL with user, e.g. {@code jdbc:mariadb://127.0.0.1:3306/test?user=root}. */
    public static Server mysql() {
        return find("MariaDB/MySQL", "IDEM_MYSQL_URL", "jdbc:mariadb://127.0.0.1:3306/test?user=root", Shared.MARIADB);
    }

    /** Redis as a Lettuce URI, e.g. {@code redis://127.0.0.1:6379}. */
    public static Server redis() {
        return find("Redis", "IDEM_REDIS_URL", "redis://127.0.0.1:6379", Shared.REDIS);
    }

    /** RabbitMQ as an AMQP URI, e.g. {@code amqp://guest:guest@127.0.0.1:5672}. */
    public static Server rabbitmq() {
        return find("RabbitMQ", "IDEM_RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672", null);
    }

    /** NATS (with JetStream) as a NATS URL, e.g. {@code nats://127.0.0.1:4222}. */
    public static Server nats() {
        return find("NATS", "IDEM_NATS_URL", "nats://127.0.0.1:4222", null);
    }

    /** True when {@code IDEM_REQUIRE_SERVICES=1}: a missing server is then a failure, not a skip. */
    public static boolean servicesRequired() {
        return "1".equals(System.getenv("IDEM_REQUIRE_SERVICES"));
    }

    /** A short prefix no other test class or run uses, e.g. for Redis keys: {@code it-<name>-<random>}. */
    public static String uniquePrefix(String name) {
        String clean = name.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9]", "");
        if (clean.length() > 20) {
            clean = clean.substring(clean.length() - 20);
        }
        return "it" + clean + Long.toString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE, 36);
    }

    private static Server find(String name, String envVar, String defaultUrl, @Nullable Fallback fallback) {
        return find(name, envVar, System.getenv(envVar), defaultUrl, fallback);
    }

    /** The lookup order of the class comment; {@code configured} is the environment variable's value. */
    static Server find(
            String name, String envVar, @Nullable String configured, String defaultUrl, @Nullable Fallback fallback) {
        boolean fromEnv = configured != null && !configured.isBlank();
        String url = configured != null && fromEnv ? configured : defaultUrl;
        URI uri = URI.create(url.startsWith("jdbc:") ? url.substring(5) : url);
        String host = uri.getHost();
        int port = uri.getPort();
        if (answers(host, port)) {
            return new Server(name, url, host, port);
        }
        String reason = name + " is not reachable at " + host + ":" + port
                + (fromEnv ? " (from " + envVar + ")" : " (default; set " + envVar + " to use another)");
        if (fromEnv || fallback == null) {
            return unavailable(reason);
        }
        Optional<String> missing = fallback.missing();
        if (missing.isPresent()) {
            return unavailable(reason + ", and no private server can start: " + missing.get());
        }
        try {
            return fallback.server();
        } catch (RuntimeException e) {
            return unavailable(reason + ", and the private server did not start: " + e.getMessage());
        }
    }

    /** Where a server comes from when the default port does not answer. */
    interface Fallback {
        /** Why this fallback cannot work on this machine, if so. */
        Optional<String> missing();

        /** The fallback server, started if need be. */
        Server server();
    }

    /**
     * A private server started on first need and shared until the JVM exits (its own exit hook stops it); a failed
     * start is remembered and reported again to every later caller.
     */
    static final class SharedPrivateServer implements Fallback {
        private final Supplier<Optional<String>> missing;
        private final Supplier<PrivateServer> start;
        private @Nullable Server server;
        private @Nullable RuntimeException failure;

        SharedPrivateServer(Supplier<Optional<String>> missing, Supplier<PrivateServer> start) {
            this.missing = missing;
            this.start = start;
        }

        @Override
        public Optional<String> missing() {
            return missing.get();
        }

        @Override
        public synchronized Server server() {
            if (failure != null) {
                throw failure;
            }
            if (server == null) {
                try {
                    server = start.get().server();
                } catch (RuntimeException e) {
                    failure = e;
                    throw e;
                }
                System.err.println("[idem-testkit] " + server.name() + " not on its default port: using a private "
                        + server.name() + " at " + server.url() + " for this JVM");
            }
            return server;
        }
    }

    /**
     * The private servers shared by the tests of one JVM. With the broker of {@code EmbeddedKafka}, the only per-JVM
     * state of the testkit, on purpose: a database server takes a second or more to create.
     */
    private static final class Shared {
        static final SharedPrivateServer POSTGRES =
                new SharedPrivateServer(PrivatePostgres::missing, PrivatePostgres::create);
        static final SharedPrivateServer MARIADB =
                new SharedPrivateServer(PrivateMariaDb::missing, PrivateMariaDb::create);
        static final SharedPrivateServer REDIS = new SharedPrivateServer(PrivateRedis::missing, PrivateRedis::create);
    }

    /**
     * Skips the calling test with {@code reason}, or fails it when {@code IDEM_REQUIRE_SERVICES=1}. Never returns.
     */
    public static <T> T unavailable(String reason) {
        if (servicesRequired()) {
            throw new IllegalStateException(reason + "; IDEM_REQUIRE_SERVICES=1 forbids skipping: start the server"
                    + " (see .ci/run for the commands)");
        }
        System.err.println("[idem-testkit] skipping: " + reason);
        Assumptions.abort(reason);
        throw new AssertionError("unreachable");
    }

    static boolean answers(String host, int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(host, port), 1000);
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}
