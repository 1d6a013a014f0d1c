package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class TcpProxyTest {
    private ServerSocket echo;

    @BeforeEach
    void startEcho() throws IOException {
        echo = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread t = new Thread(() -> {
            while (!echo.isClosed()) {
                try {
                    Socket s = echo.accept();
                    Thread c = new Thread(() -> {
                        try (s;
                                InputStream in = s.getInputStream();
                                OutputStream out = s.getOutputStream()) {
                            in.transferTo(out);
                        } catch (IOException ignored) {
                            // client gone
                        }
                    });
                    c.setDaemon(true);
                    c.start();
                } catch (IOException e) {
                    return;
                }
            }
        });
        t.setDaemon(true);
        t.start();
    }

    @AfterEach
    void stopEcho() throws IOException {
        echo.close();
    }

    private static int roundTrip(Socket s, int b) throws IOException {
        s.getOutputStream().write(b);
        s.getOutputStream().flush();
        return s.getInputStream().read();
    }

    @Test
    void healthyProxy_forwardsBothWays() throws IOException {
        try (TcpProxy proxy = TcpProxy.start("127.0.0.1", echo.getLocalPort());
                Socket s = new Socket("127.0.0.1", proxy.port())) {
            s.setSoTimeout(5000);
            assertThat(roundTrip(s, 7)).isEqualTo(7);
        }
    }

    @Test
    void blackholedConnection_losesAnswers_butNewConnectionsWork() throws IOException {
        try (TcpProxy proxy = TcpProxy.start("127.0.0.1", echo.getLocalPort());
                Socket old = new Socket("127.0.0.1", proxy.port())) {
            old.setSoTimeout(300);
            assertThat(roundTrip(old, 1)).isEqualTo(1);

            proxy.blackholeExisting();

            assertThatThrownBy(() -> roundTrip(old, 2)).isInstanceOf(SocketTimeoutException.class);
            try (Socket fresh = new Socket("127.0.0.1", proxy.port())) {
                fresh.setSoTimeout(5000);
                assertThat(roundTrip(fresh, 3)).isEqualTo(3);
            }
        }
    }

    @Test
    void droppedConnections_areClosed() throws IOException {
        try (TcpProxy proxy = TcpProxy.start("127.0.0.1", echo.getLocalPort());
                Socket s = new Socket("127.0.0.1", proxy.port())) {
            s.setSoTimeout(5000);
            assertThat(roundTrip(s, 1)).isEqualTo(1);

            proxy.dropAllConnections();

            assertThat(s.getInputStream().read()).isEqualTo(-1);
        }
    }

    @Test
    void aConnectionAcceptedWhileTheDropRuns_isCutToo() throws Exception {
        CountDownLatch accepted = new CountDownLatch(1);
        CountDownLatch dropped = new CountDownLatch(1);
        TcpProxy.Upstream slowToConnect = () -> {
            accepted.countDown();
            dropped.await();
            return new Socket("127.0.0.1", echo.getLocalPort());
        };
        try (TcpProxy proxy = TcpProxy.start(InetAddress.getLoopbackAddress(), 0, slowToConnect);
                Socket s = new Socket("127.0.0.1", proxy.port())) {
            s.setSoTimeout(5000);
            accepted.await();

            proxy.dropAllConnections();
            dropped.countDown();

            assertThat(readOrClosed(s))
                    .as("the connection accepted before the cut is closed")
                    .isEqualTo(-1);
        }
    }

    /** What the next read gives: a byte, or -1 when the proxy closed the connection (also by a reset). */
    private static int readOrClosed(Socket s) throws IOException {
        try {
            s.getOutputStream().write(9);
            s.getOutputStream().flush();
            return s.getInputStream().read();
        } catch (SocketException closed) {
            return -1;
        }
    }

    @Test
    void aServerThatCannotBeReached_closesTheClientsConnection_insteadOfLeavingItHanging() throws Exception {
        int closedPort;
        try (ServerSocket gone = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            closedPort = gone.getLocalPort();
        }
        try (TcpProxy proxy = TcpProxy.start("127.0.0.1", closedPort);
                Socket client = new Socket(InetAddress.getLoopbackAddress(), proxy.port())) {
            client.setSoTimeout(10_000);
            client.getOutputStream().write(1);

            assertThat(readOrReset(client))
                    .as("end of stream or reset, not a 10 s wait")
                    .isEqualTo(-1);
        }
    }

    private static int readOrReset(Socket s) throws IOException {
        try {
            return s.getInputStream().read();
        } catch (SocketException reset) {
            return -1;
        }
    }
}
