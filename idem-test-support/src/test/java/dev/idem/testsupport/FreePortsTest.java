package dev.idem.testsupport;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FreePortsTest {

    @Test
    void aPortWithItsNeighbours_isBelowTheEphemeralRange_andEveryOneCanBeBound() throws IOException {
        int port = FreePorts.withNeighbours(2, 1);

        assertThat(port - 2).isGreaterThanOrEqualTo(1024);
        assertThat(port + 1).as("below Linux's ephemeral ports").isLessThan(32_768);
        for (int p : IntStream.rangeClosed(port - 2, port + 1).toArray()) {
            try (ServerSocket socket = new ServerSocket()) {
                socket.bind(new InetSocketAddress(p), 1);
            }
        }
    }

    @Test
    void aPortSomeoneListensOn_isNeverGiven() throws IOException {
        try (ServerSocket taken = new ServerSocket()) {
            taken.bind(new InetSocketAddress(FreePorts.any()), 1);

            assertThat(IntStream.range(0, 2_000).map(i -> FreePorts.any())).doesNotContain(taken.getLocalPort());
        }
    }

    @Test
    void aPortGivenOnce_isNeverGivenAgainInThisJvm() {
        Set<Integer> given = new HashSet<>();

        for (int i = 0; i < 500; i++) {
            assertThat(given.add(FreePorts.any())).as("given twice").isTrue();
        }
    }

    /** Two test JVMs starting servers at the same moment: a port one reserved is not the other's until it ends. */
    @Test
    void aPortAnotherJvmReserved_isNotGivenHere_untilThatJvmEnds(@TempDir Path log) throws Exception {
        int port = FreePorts.any();
        FreePorts.release(port);
        ChildJvm other = ChildJvm.start("RESERVED", Reserver.class, log.resolve("child.log"), Integer.toString(port));
        try {
            assertThat(other.awaitSignal(Duration.ofSeconds(30)))
                    .as("the other JVM reserved the port")
                    .isTrue();

            assertThat(FreePorts.reserve(port)).as("reserved by the other JVM").isFalse();
        } finally {
            other.kill();
        }
        assertThat(awaitReserved(port))
                .as("the other JVM ended: its reservation with it")
                .isTrue();
    }

    private static boolean awaitReserved(int port) throws InterruptedException {
        for (int i = 0; i < 100; i++) {
            if (FreePorts.reserve(port)) {
                return true;
            }
            Thread.sleep(100);
        }
        return false;
    }

    /** The other JVM: reserves the port it is given, says so, and waits to be killed. */
    public static final class Reserver {
        public static void main(String[] args) throws InterruptedException {
            if (!FreePorts.reserve(Integer.parseInt(args[0]))) {
                System.exit(1);
            }
            System.out.println("RESERVED");
            Thread.sleep(Long.MAX_VALUE);
        }
    }
}
