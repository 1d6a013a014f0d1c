package dev.idem.testsupport;

import dev.idem.testkit.TcpProxy;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import kafka.tools.StorageTool;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;
import org.jspecify.annotations.Nullable;

/**
 * A real Kafka broker in this JVM: one combined KRaft node (broker and controller) on free ports of 127.0.0.1, with
 * its log in a temporary directory deleted on {@link #close()}. Optionally a second listener {@code EXTERNAL} is
 * advertised through a {@link TcpProxy}, so that clients bootstrapping at {@link #proxiedBootstrapServers()} talk
 * to the broker only through the proxy (Kafka clients follow the advertised address, so the proxy must be the
 * advertised one) and a test can lose the broker's responses.
 *
 * <p>The broker jars ({@code org.apache.kafka:kafka_2.13}, {@code kafka-server}, {@code kafka-server-common}, {@code
 * kafka-clients}) are optional dependencies of the testkit: add them to your test classpath.
 *
 * <pre>{@code
 * EmbeddedKafka kafka = EmbeddedKafka.shared();          // one broker for the whole test JVM
 * kafka.createTopic("orders", 2);
 * props.put("bootstrap.servers", kafka.bootstrapServers());
 * }</pre>
 *
 * <p>Starting takes a few seconds and ~100 MB of heap; tests should share {@link #shared()} and isolate themselves
 * with unique topic and group names. Thread-safe.
 */
public final class EmbeddedKafka implements AutoCloseable {

    private final KafkaRaftServer server;
    private final Path directory;
    private final String bootstrapServers;
    private final @Nullable TcpProxy proxy;
    private final Admin admin;
    private final @Nullable String saslBootstrapServers;

    /** Not a broker setting: carries the SASL listener's port from {@link #startWithSaslPlain} to {@link #start}. */
    private static final String SASL_PORT = "idem.sasl.port";

    private EmbeddedKafka(
            KafkaRaftServer server,
            Path directory,
            String bootstrapServers,
            @Nullable TcpProxy proxy,
            @Nullable String saslBootstrapServers) {
        this.server = server;
        this.saslBootstrapServers = saslBootstrapServers;
        this.directory = directory;
        this.bootstrapServers = bootstrapServers;
        this.proxy = proxy;
        this.admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers));
    }

    /**
     * The broker shared by every test of this JVM, started on first use with a proxied {@code EXTERNAL} listener and
     * stopped by a shutdown hook.
     */
    public static EmbeddedKafka shared() {
        return Shared.BROKER;
    }

    /** A private broker without a proxy; the caller closes it. */
    public static EmbeddedKafka start() {
        return start(false, Map.of());
    }

    /**
     * A private broker that also listens on {@code SASL_PLAINTEXT} with mechanism {@code PLAIN} for the one user
     * {@code user}/{@code password}, at {@link #saslBootstrapServers()}; the caller closes it.
     */
    public static EmbeddedKafka startWithSaslPlain(String user, String password) {
        int saslPort = FreePorts.any();
        Map<String, String> props = new HashMap<>();
        props.put(SASL_PORT, Integer.toString(saslPort));
        props.put("sasl.enabled.mechanisms", "PLAIN");
        props.put(
                "listener.name.sasl.plain.sasl.jaas.config",
                "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"" + user + "\" password=\""
                        + password + "\" user_" + user + "=\"" + password + "\";");
        return start(false, props);
    }

    /**
     * A private broker; the caller closes it.
     *
     * @param withProxy also listen on {@code EXTERNAL}, advertised through a {@link TcpProxy}
     * @param brokerProperties extra broker settings, overriding the defaults
     */
    public static EmbeddedKafka start(boolean withProxy, Map<String, String> brokerProperties) {
        Path directory;
        try {
            directory = Files.createTempDirectory("idem-kafka-");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create a temporary directory for the Kafka log", e);
        }
        TcpProxy proxy = null;
        try {
            int port = FreePorts.any();
            int controllerPort = FreePorts.any();
            Properties props = new Properties();
            props.put("process.roles", "broker,controller");
            props.put("node.id", "1");
            props.put("controller.quorum.voters", "1@127.0.0.1:" + controllerPort);
            props.put("controller.listener.names", "CONTROLLER");
            props.put("inter.broker.listener.name", "PLAINTEXT");
            String listeners = "PLAINTEXT://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + controllerPort;
            String advertised = "PLAINTEXT://127.0.0.1:" + port;
            String protocols = "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT";
            if (withProxy) {
                int externalPort = FreePorts.any();
                proxy = TcpProxy.start("127.0.0.1", externalPort);
                listeners += ",EXTERNAL://127.0.0.1:" + externalPort;
                advertised += ",EXTERNAL://127.0.0.1:" + proxy.port();
                protocols += ",EXTERNAL:PLAINTEXT";
            }
            String saslPort = brokerProperties.get(SASL_PORT);
            if (saslPort != null) {
                listeners += ",SASL://127.0.0.1:" + saslPort;
                advertised += ",SASL://127.0.0.1:" + saslPort;
                protocols += ",SASL:SASL_PLAINTEXT";
            }
            props.put("listeners", listeners);
            props.put("advertised.listeners", advertised);
            props.put("listener.security.protocol.map", protocols);
            props.put("log.dirs", directory.resolve("data").toString());
            props.put("offsets.topic.replication.factor", "1");
            props.put("offsets.topic.num.partitions", "1");
            props.put("transaction.state.log.replication.factor", "1");
            props.put("transaction.state.log.min.isr", "1");
            props.put("transaction.state.log.num.partitions", "1");
            props.put("share.coordinator.state.topic.replication.factor", "1");
            props.put("share.coordinator.state.topic.min.isr", "1");
            props.put("group.initial.rebalance.delay.ms", "0");
            props.put("auto.create.topics.enable", "false");
            // The default dedupe buffer takes 128 MiB of heap; tests never compact that much.
            props.put("log.cleaner.dedupe.buffer.size", "2097152");
            // Let tests use short consumer sessions (the broker's default minimum is 6 s).
            props.put("group.min.session.timeout.ms", "500");
            // The same for the consumer protocol (KIP-848), whose minimums are 45 s sessions and 5 s heartbeats.
            props.put("group.consumer.min.session.timeout.ms", "1000");
            props.put("group.consumer.session.timeout.ms", "6000");
            props.put("group.consumer.min.heartbeat.interval.ms", "100");
            props.put("group.consumer.heartbeat.interval.ms", "500");
            props.putAll(brokerProperties);
            props.remove(SASL_PORT);

            format(props, directory);
            KafkaRaftServer server = new KafkaRaftServer(KafkaConfig.fromProps(props, false), Time.SYSTEM);
            server.startup();
            EmbeddedKafka kafka = new EmbeddedKafka(
                    server, directory, "127.0.0.1:" + port, proxy, saslPort == null ? null : "127.0.0.1:" + saslPort);
            kafka.awaitReady();
            return kafka;
        } catch (RuntimeException e) {
            if (proxy != null) {
                proxy.close();
            }
            PrivateServer.deleteRecursively(directory);
            throw e;
        }
    }

    /** {@code host:port} of the plain listener. */
    public String bootstrapServers() {
        return bootstrapServers;
    }

    /** {@code host:port} of the {@code SASL_PLAINTEXT} listener of a broker from {@link #startWithSaslPlain}. */
    public String saslBootstrapServers() {
        if (saslBootstrapServers == null) {
            throw new IllegalStateException("this broker was started without SASL: use startWithSaslPlain(...)");
        }
        return saslBootstrapServers;
    }

    /** {@code host:port} of the proxy in front of the {@code EXTERNAL} listener. */
    public String proxiedBootstrapServers() {
        return "127.0.0.1:" + proxy().port();
    }

    /** The proxy in front of the {@code EXTERNAL} listener. */
    public TcpProxy proxy() {
        if (proxy == null) {
            throw new IllegalStateException(
                    "this broker was started without a proxy: use start(true, ...) or shared()");
        }
        return proxy;
    }

    /** Creates a topic with {@code partitions} partitions (replication factor 1) and waits until it exists. */
    /**
     * Waits until the broker serves metadata for every partition of a topic it just created (the controller answers
     * the creation first), so that a client started next finds it, e.g. a dead-letter topic check at start-up.
     */
    private void awaitLeaders(String name, int partitions)
            throws InterruptedException, ExecutionException, TimeoutException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            try {
                var description = admin.describeTopics(List.of(name))
                        .allTopicNames()
                        .get(30, TimeUnit.SECONDS)
                        .get(name);
                if (description != null
                        && description.partitions().size() == partitions
                        && description.partitions().stream().allMatch(p -> p.leader() != null)) {
                    return;
                }
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof org.apache.kafka.common.errors.UnknownTopicOrPartitionException)) {
                    throw e;
                }
            }
            if (System.nanoTime() > deadline) {
                throw new TimeoutException("topic " + name + " has no leader for every partition after 30 s");
            }
            Thread.sleep(20);
        }
    }

    public void createTopic(String name, int partitions) {
        try {
            admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1)))
                    .all()
                    .get(30, TimeUnit.SECONDS);
            awaitLeaders(name, partitions);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while creating topic " + name, e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("cannot create topic " + name + ": " + e.getMessage(), e);
        }
    }

    /** An admin client on this broker, owned by this object (do not close it). */
    public Admin admin() {
        return admin;
    }

    /** Stops the broker and deletes its log directory. */
    @Override
    public void close() {
        admin.close();
        if (proxy != null) {
            proxy.close();
        }
        server.shutdown();
        server.awaitShutdown();
        PrivateServer.deleteRecursively(directory);
    }

    private void awaitReady() {
        try {
            admin.describeCluster().nodes().get(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the embedded Kafka broker", e);
        } catch (ExecutionException | TimeoutException e) {
            close();
            throw new IllegalStateException("the embedded Kafka broker did not answer: " + e.getMessage(), e);
        }
    }

    private static void format(Properties props, Path directory) {
        Path file = directory.resolve("server.properties");
        try (OutputStream out = Files.newOutputStream(file)) {
            props.store(out, "idem embedded kafka");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
        ByteArrayOutputStream output = new ByteArrayOutputStream();
        int status;
        try (PrintStream print = new PrintStream(output, true, StandardCharsets.UTF_8)) {
            // execute, not main: main exits the JVM
            status = StorageTool.execute(
                    new String[] {
                        "format", "-t", Uuid.randomUuid().toString(), "-c", file.toString(), "--ignore-formatted"
                    },
                    print);
        }
        if (status != 0) {
            throw new IllegalStateException("formatting the Kafka log directory failed (" + status + "): "
                    + output.toString(StandardCharsets.UTF_8));
        }
    }

    /**
     * Holder of the shared broker (class initialisation makes the lazy start thread-safe). This is the one piece of
     * per-JVM state in Idem, on purpose: a broker takes seconds and ~100 MB to start, so every test class of a JVM
     * shares one instead of starting its own; tests stay independent through unique topic and group names.
     */
    private static final class Shared {
        static final EmbeddedKafka BROKER = startShared();

        private static EmbeddedKafka startShared() {
            EmbeddedKafka kafka = start(true, new HashMap<>());
            Runtime.getRuntime().addShutdownHook(new Thread(kafka::close, "idem-embedded-kafka-stop"));
            return kafka;
        }
    }
}
