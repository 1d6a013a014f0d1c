package dev.idem.testsupport;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

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
}
