package dev.idem.testsupport;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.IntStream;

/**
 * Ports for the servers and brokers a test starts: picked at random below the kernel's ephemeral range (32768 and up
 * on Linux), and free on every address when picked. A port the kernel hands out for a bind to port 0 comes from the
 * ephemeral range, where any outgoing connection can take it before the server binds it: on a loaded machine an
 * in-process RocketMQ broker failed to start with "Address already in use".
 */
public final class FreePorts {
    private static final int LOWEST = 20_000;
    private static final int BELOW_EPHEMERAL = 32_768;
    private static final int ATTEMPTS = 200;

    private FreePorts() {}

    /** A free port. */
    public static int any() {
        return withNeighbours(0, 0);
    }

    /** A free port p with the ports from p - {@code below} to p + {@code above} free too. */
    public static int withNeighbours(int below, int above) {
        for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
            int port = ThreadLocalRandom.current().nextInt(LOWEST + below, BELOW_EPHEMERAL - above);
            if (IntStream.rangeClosed(port - below, port + above).allMatch(FreePorts::free)) {
                return port;
            }
        }
        throw new UncheckedIOException(new IOException(
                "no free port between " + LOWEST + " and " + BELOW_EPHEMERAL + " after " + ATTEMPTS + " tries"));
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
