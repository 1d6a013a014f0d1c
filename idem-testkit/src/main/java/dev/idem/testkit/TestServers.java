package dev.idem.testkit;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.Assumptions;

/**
 * Finds the real server an integration test talks to, one rule for all: the environment variable ({@code
 * IDEM_PG_URL}, {@code IDEM_MYSQL_URL}, {@code IDEM_REDIS_URL}, {@code IDEM_RABBITMQ_URL}, {@code IDEM_NATS_URL}),
 * else the default local port if it answers, else the test is skipped with the reason printed. With {@code
 * IDEM_REQUIRE_SERVICES=1} (as {@code .ci/run} sets it) a missing server fails the test instead.
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
        return find("PostgreSQL", "IDEM_PG_URL", "jdbc:postgresql://127.0.0.1:5432/test?user=postgres");
    }

    /** MariaDB or MySQL as a JDBC URL with user, e.g. {@code jdbc:mariadb://127.0.0.1:3306/test?user=root}. */
    public static Server mysql() {
        return find("MariaDB/MySQL", "IDEM_MYSQL_URL", "jdbc:mariadb://127.0.0.1:3306/test?user=root");
    }

    /** Redis as a Lettuce URI, e.g. {@code redis://127.0.0.1:6379}. */
    public static Server redis() {
        return find("Redis", "IDEM_REDIS_URL", "redis://127.0.0.1:6379");
    }

    /** RabbitMQ as an AMQP URI, e.g. {@code amqp://guest:guest@127.0.0.1:5672}. */
    public static Server rabbitmq() {
        return find("RabbitMQ", "IDEM_RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672");
    }

    /** NATS (with JetStream) as a NATS URL, e.g. {@code nats://127.0.0.1:4222}. */
    public static Server nats() {
        return find("NATS", "IDEM_NATS_URL", "nats://127.0.0.1:4222");
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

    private static Server find(String name, String envVar, String defaultUrl) {
        Optional<String> configured = Optional.ofNullable(System.getenv(envVar)).filter(s -> !s.isBlank());
        String url = configured.orElse(defaultUrl);
        URI uri = URI.create(url.startsWith("jdbc:") ? url.substring(5) : url);
        String host = uri.getHost();
        int port = uri.getPort();
        if (answers(host, port)) {
            return new Server(name, url, host, port);
        }
        String reason = name + " is not reachable at " + host + ":" + port
                + (configured.isPresent() ? " (from " + envVar + ")" : " (default; set " + envVar + " to use another)");
        return unavailable(reason);
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
