package dev.idem.demo;

import dev.idem.testkit.TcpProxy;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import kafka.tools.StorageTool;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;

/**
 * A Kafka broker in this JVM (one combined KRaft node on free ports of 127.0.0.1), with a second listener advertised
 * through a {@link TcpProxy} so that the lab can lose produce acknowledgements. Its log lives in a temporary
 * directory deleted on {@link #close()}.
 */
final class EmbeddedBroker implements AutoCloseable {
    private final KafkaRaftServer server;
    private final Path directory;
    private final String bootstrapServers;
    private final TcpProxy proxy;

    private EmbeddedBroker(KafkaRaftServer server, Path directory, String bootstrapServers, TcpProxy proxy) {
        this.server = server;
        this.directory = directory;
        this.bootstrapServers = bootstrapServers;
        this.proxy = proxy;
    }

    static EmbeddedBroker start() throws IOException {
        Path directory = Files.createTempDirectory("idem-lab-kafka-");
        int port = freePort();
        int controllerPort = freePort();
        int externalPort = freePort();
        TcpProxy proxy = TcpProxy.start("127.0.0.1", externalPort);
        Properties props = new Properties();
        props.put("process.roles", "broker,controller");
        props.put("node.id", "1");
        props.put("controller.quorum.voters", "1@127.0.0.1:" + controllerPort);
        props.put("controller.listener.names", "CONTROLLER");
        props.put("inter.broker.listener.name", "PLAINTEXT");
        props.put(
                "listeners",
                "PLAINTEXT://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + controllerPort + ",EXTERNAL://127.0.0.1:"
                        + externalPort);
        props.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + port + ",EXTERNAL://127.0.0.1:" + proxy.port());
        props.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,EXTERNAL:PLAINTEXT");
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
        props.put("log.cleaner.dedupe.buffer.size", "2097152");
        props.put("group.min.session.timeout.ms", "500");
        try {
            format(props, directory);
            KafkaRaftServer server = new KafkaRaftServer(KafkaConfig.fromProps(props, false), Time.SYSTEM);
            server.startup();
            EmbeddedBroker broker = new EmbeddedBroker(server, directory, "127.0.0.1:" + port, proxy);
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + port))) {
                admin.describeCluster().nodes().get(60, TimeUnit.SECONDS);
            } catch (Exception e) {
                broker.close();
                throw new IllegalStateException("the in-process Kafka broker did not start: " + e.getMessage(), e);
            }
            return broker;
        } catch (RuntimeException e) {
            proxy.close();
            deleteRecursively(directory);
            throw e;
        }
    }

    String bootstrapServers() {
        return bootstrapServers;
    }

    String proxiedBootstrapServers() {
        return "127.0.0.1:" + proxy.port();
    }

    TcpProxy proxy() {
        return proxy;
    }

    @Override
    public void close() {
        proxy.close();
        server.shutdown();
        server.awaitShutdown();
        deleteRecursively(directory);
    }

    private static void format(Properties props, Path directory) {
        Path file = directory.resolve("server.properties");
        try (OutputStream out = Files.newOutputStream(file)) {
            props.store(out, "idem lab broker");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
        ByteArrayOutputStream output = new ByteArrayOutputStream();
        int status;
        try (PrintStream print = new PrintStream(output, true, StandardCharsets.UTF_8)) {
            status = StorageTool.execute(
                    new String[] {
                        "format", "-t", Uuid.randomUuid().toString(), "-c", file.toString(), "--ignore-formatted"
                    },
                    print);
        }
        if (status != 0) {
            throw new IllegalStateException(
                    "formatting the Kafka log directory failed: " + output.toString(StandardCharsets.UTF_8));
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    private static void deleteRecursively(Path directory) {
        if (!Files.exists(directory)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(directory)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // a temporary directory left behind is harmless
        }
    }
}
