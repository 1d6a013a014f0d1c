package dev.idem.redis;

import dev.idem.testsupport.FreePorts;
import io.lettuce.core.cluster.SlotHash;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;

/**
 * A Redis Cluster of the test's own: three masters with one replica each, from the installed redis-server on free
 * ports (the cluster bus on another free port), joined with {@code redis-cli --cluster create}. Node timeout 1 s, so
 * that failovers are quick.
 */
final class LocalRedisCluster implements AutoCloseable {
    private static final Path CLI = Path.of("/usr/bin/redis-cli");

    private final List<RedisProcess> nodes;

    private LocalRedisCluster(List<RedisProcess> nodes) {
        this.nodes = nodes;
    }

    static LocalRedisCluster start() {
        List<RedisProcess> nodes = new ArrayList<>();
        try {
            for (int i = 0; i < 6; i++) {
                nodes.add(RedisProcess.server(
                        "cluster-" + i,
                        "--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        "nodes.conf",
                        "--cluster-node-timeout",
                        "1000",
                        "--cluster-port",
                        Integer.toString(FreePorts.any()),
                        "--cluster-replica-validity-factor",
                        "0"));
            }
            List<String> command = new ArrayList<>(List.of(CLI.toString(), "--cluster", "create"));
            nodes.forEach(n -> command.add("127.0.0.1:" + n.port()));
            command.addAll(List.of("--cluster-replicas", "1", "--cluster-yes"));
            run(command);
            LocalRedisCluster cluster = new LocalRedisCluster(nodes);
            Awaitility.await("every node sees the cluster ok")
                    .atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(100))
                    .until(() -> nodes.stream()
                            .allMatch(n -> n.info("cluster", "cluster_enabled").equals("1")
                                    && n.sync(c -> c.clusterInfo()).contains("cluster_state:ok")));
            return cluster;
        } catch (RuntimeException e) {
            nodes.forEach(RedisProcess::close);
            throw e;
        }
    }

    private static void run(List<String> command) {
        try {
            Path log = Files.createTempFile("idem-redis-cluster-create", ".log");
            Process p = new ProcessBuilder(command)
                    .redirectErrorStream(true)
                    .redirectOutput(log.toFile())
                    .start();
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
                p.destroyForcibly();
                throw new IllegalStateException(command + " failed:\n" + Files.readString(log));
            }
            Files.delete(log);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** A seed node's URL: any live node. */
    String seed() {
        return nodes.stream()
                .filter(RedisProcess::isAlive)
                .findFirst()
                .orElseThrow()
                .url();
    }

    /** The master now serving the slot of {@code key}, as a live node sees the cluster. */
    RedisProcess masterOf(String key) {
        int slot = SlotHash.getSlot(key);
        for (String[] node : clusterNodes()) {
            if (node[2].contains("master") && !node[2].contains("fail") && serves(node, slot)) {
                return byAddress(node[1]);
            }
        }
        throw new IllegalStateException("no master serves slot " + slot);
    }

    /** A replica of {@code master}. */
    RedisProcess replicaOf(RedisProcess master) {
        String masterId = master.sync(c -> c.clusterMyId());
        return clusterNodes().stream()
                .filter(n -> n[3].equals(masterId))
                .findFirst()
                .map(n -> byAddress(n[1]))
                .orElseThrow(() -> new IllegalStateException(master + " has no replica"));
    }

    private List<String[]> clusterNodes() {
        RedisProcess any =
                nodes.stream().filter(RedisProcess::isAlive).findFirst().orElseThrow();
        return any.sync(c -> c.clusterNodes()).lines().map(l -> l.split(" ")).toList();
    }

    private static boolean serves(String[] node, int slot) {
        return Arrays.stream(node, 8, node.length)
                .filter(r -> !r.startsWith("["))
                .anyMatch(range -> {
                    String[] ends = range.split("-");
                    int from = Integer.parseInt(ends[0]);
                    int to = ends.length == 2 ? Integer.parseInt(ends[1]) : from;
                    return from <= slot && slot <= to;
                });
    }

    private RedisProcess byAddress(String address) {
        int port = Integer.parseInt(address.substring(address.indexOf(':') + 1, address.indexOf('@')));
        Optional<RedisProcess> node =
                nodes.stream().filter(n -> n.port() == port).findFirst();
        return node.orElseThrow(() -> new IllegalStateException("no node on port " + port));
    }

    @Override
    public void close() {
        nodes.forEach(RedisProcess::close);
    }
}
