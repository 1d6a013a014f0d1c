package dev.idem.testsupport;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.IntStream;

/**
 * Ports for the servers and brokers a test starts: picked at random below the kernel's ephemeral range (32768 and up
 * on Linux), free on every address when picked, and reserved for this JVM until it exits, so that no other test JVM
 * is given the same port before the server binds it (seen with three modules building at once: "Failed to bind").
 * A port the kernel hands out for a bind to port 0 comes from the ephemeral range, where any outgoing connection can
 * take it before the server binds it: on a loaded machine an in-process RocketMQ broker failed to start with "Address
 * already in use".
 *
 * <p>A reservation is an exclusive lock on a file per port in {@code <java.io.tmpdir>/idem-ports}; the operating
 * system releases a JVM's locks when it ends, {@code kill -9} included.
 */
public final class FreePorts {
    private static final int LOWEST = 20_000;
    private static final int BELOW_EPHEMERAL = 32_768;
    private static final int ATTEMPTS = 200;
    private static final Path RESERVATIONS = Path.of(System.getProperty("java.io.tmpdir"), "idem-ports");
    /** The reservations this JVM holds; each lock keeps its file's channel open. */
    private static final Map<Integer, FileLock> HELD = new ConcurrentHashMap<>();

    private FreePorts() {}

    /** A free port. */
    public static int any() {
        return withNeighbours(0, 0);
    }

    /** A free port p with the ports from p - {@code below} to p + {@code above} free too. */
    public static int withNeighbours(int below, int above) {
        for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
            int port = ThreadLocalRandom.current().nextInt(LOWEST + below, BELOW_EPHEMERAL - above);
            int[] range = IntStream.rangeClosed(port - below, port + above).toArray();
            if (reserveAll(range)) {
                if (IntStream.of(range).allMatch(FreePorts::free)) {
                    return port;
                }
                IntStream.of(range).forEach(FreePorts::release);
            }
        }
        throw new UncheckedIOException(new IOException(
                "no free port between " + LOWEST + " and " + BELOW_EPHEMERAL + " after " + ATTEMPTS + " tries"));
    }

    private static boolean reserveAll(int[] ports) {
        for (int i = 0; i < ports.length; i++) {
            if (!reserve(ports[i])) {
                IntStream.range(0, i).forEach(j -> release(ports[j]));
                return false;
            }
        }
        return true;
    }

    /** Reserves {@code port} for this JVM; false when this or another JVM holds it. */
    static synchronized boolean reserve(int port) {
        if (HELD.containsKey(port)) {
            return false;
        }
        try {
            Files.createDirectories(RESERVATIONS);
            FileChannel channel = FileChannel.open(
                    RESERVATIONS.resolve(port + ".lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
            FileLock lock = channel.tryLock();
            if (lock == null) {
                channel.close();
                return false;
            }
            HELD.put(port, lock);
            return true;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot reserve port " + port + " in " + RESERVATIONS, e);
        }
    }

    /** Gives {@code port} back (to this JVM and the others). */
    static synchronized void release(int port) {
        FileLock lock = HELD.remove(port);
        if (lock != null) {
            try {
                lock.channel().close();
            } catch (IOException e) {
                throw new UncheckedIOException("cannot release port " + port, e);
            }
        }
    }

    private static boolean free(int port) {
        try (ServerSocket socket = new ServerSocket()) {
            socket.bind(new InetSocketAddress(port), 1);
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}
