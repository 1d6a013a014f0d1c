package com.example.payments;

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
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import kafka.tools.StorageTool;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;

/**
 * A real one-node Kafka broker (KRaft) in the test's JVM, on free ports of 127.0.0.1, with its log in a temporary
 * directory deleted on {@link #close()}.
 */
final class InProcessKafka implements AutoCloseable {
    private final KafkaRaftServer server;
    private final Path directory;
    private final String bootstrapServers;
    private final Admin admin;

    private InProcessKafka(KafkaRaftServer server, Path directory, String bootstrapServers) {
        this.server = server;
        this.directory = directory;
        this.bootstrapServers = bootstrapServers;
        this.admin = Admin.create(Map.of("bootstrap.servers", bootstrapServers));
    }

    static InProcessKafka start() throws Exception {
        Path directory = Files.createTempDirectory("kafka-payments-test");
        int port = freePort();
        int controllerPort = freePort();
        Properties props = new Properties();
        props.put("process.roles", "broker,controller");
        props.put("node.id", "1");
        props.put("controller.quorum.voters", "1@127.0.0.1:" + controllerPort);
        props.put("controller.listener.names", "CONTROLLER");
        props.put("listeners", "PLAINTEXT://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + controllerPort);
        props.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + port);
        props.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        props.put("log.dirs", directory.resolve("data").toString());
        props.put("offsets.topic.replication.factor", "1");
        props.put("offsets.topic.num.partitions", "1");
        props.put("transaction.state.log.replication.factor", "1");
        props.put("transaction.state.log.min.isr", "1");
        props.put("share.coordinator.state.topic.replication.factor", "1");
        props.put("group.initial.rebalance.delay.ms", "0");
        props.put("log.cleaner.dedupe.buffer.size", "2097152");
        format(props, directory);
        KafkaRaftServer server = new KafkaRaftServer(KafkaConfig.fromProps(props, false), Time.SYSTEM);
        server.startup();
        InProcessKafka kafka = new InProcessKafka(server, directory, "127.0.0.1:" + port);
        kafka.admin.describeCluster().nodes().get(60, TimeUnit.SECONDS);
        return kafka;
    }

    String bootstrapServers() {
        return bootstrapServers;
    }

    Admin admin() {
        return admin;
    }

    void createTopic(String name, int partitions) throws Exception {
        admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1))).all().get(30, TimeUnit.SECONDS);
    }

    @Override
    public void close() {
        admin.close();
        server.shutdown();
        server.awaitShutdown();
        try (Stream<Path> paths = Files.walk(directory)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            System.err.println("could not delete " + directory + ": " + e);
        }
    }

    private static void format(Properties props, Path directory) throws IOException {
        Path file = directory.resolve("server.properties");
        try (OutputStream out = Files.newOutputStream(file)) {
            props.store(out, "in-process test broker");
        }
        ByteArrayOutputStream output = new ByteArrayOutputStream();
        try (PrintStream print = new PrintStream(output, true, StandardCharsets.UTF_8)) {
            String[] command = {"format", "-t", Uuid.randomUuid().toString(), "-c", file.toString()};
            if (StorageTool.execute(command, print) != 0) {
                throw new IllegalStateException("formatting the Kafka log failed: " + output);
            }
        }
    }

    private static int freePort() {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
