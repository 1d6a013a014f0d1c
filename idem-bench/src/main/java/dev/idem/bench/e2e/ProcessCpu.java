package dev.idem.bench.e2e;

import com.sun.management.OperatingSystemMXBean;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * CPU time of this JVM and of the server processes (PostgreSQL, MariaDB, Redis), read from {@code /proc/<pid>/stat}
 * of every process whose name is one of theirs. A server process that exits during a run loses its share; the pools
 * keep their connections, so the backends live through a run. On a machine without {@code /proc} the servers read 0.
 */
final class ProcessCpu {
    /** The process names ({@code comm}) of each server. */
    static final Map<String, List<String>> SERVERS = Map.of(
            "postgres", List.of("postgres"),
            "mariadb", List.of("mariadbd", "mysqld"),
            "redis", List.of("redis-server"));

    private static final long NANOS_PER_TICK = TimeUnit.SECONDS.toNanos(1) / 100; // CLK_TCK is 100 on Linux

    private ProcessCpu() {}

    /** CPU time this JVM used so far, all threads, in ns. */
    static long jvmNanos() {
        return ((OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    /** CPU time per live process of {@code server}, pid to ns (user + system). */
    static Map<Long, Long> serverNanos(String server) {
        Map<Long, Long> cpu = new HashMap<>();
        List<String> names = SERVERS.get(server);
        try (var procs = Files.list(Path.of("/proc"))) {
            for (Path p : (Iterable<Path>) procs::iterator) {
                String dir = p.getFileName().toString();
                if (!dir.chars().allMatch(Character::isDigit)) {
                    continue;
                }
                try {
                    String stat = Files.readString(p.resolve("stat"));
                    int open = stat.indexOf('(');
                    int close = stat.lastIndexOf(')');
                    if (!names.contains(stat.substring(open + 1, close))) {
                        continue;
                    }
                    String[] f = stat.substring(close + 2).split(" ");
                    long ticks = Long.parseLong(f[11]) + Long.parseLong(f[12]); // utime, stime
                    cpu.put(Long.parseLong(dir), ticks * NANOS_PER_TICK);
                } catch (IOException | RuntimeException gone) {
                    // the process ended while we read
                }
            }
        } catch (IOException noProc) {
            // not Linux
        }
        return cpu;
    }

    /** CPU the processes of {@code after} used since {@code before} (a process new since then counts in full). */
    static long used(Map<Long, Long> before, Map<Long, Long> after) {
        long sum = 0;
        for (var e : after.entrySet()) {
            sum += e.getValue() - before.getOrDefault(e.getKey(), 0L);
        }
        return sum;
    }
}
