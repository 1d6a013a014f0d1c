package dev.idem.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP proxy on 127.0.0.1 that a test can make misbehave: swallow the server's answers (a lost ack), cut both
 * directions while keeping the sockets open (a network partition), or drop every connection. Daemon threads only.
 *
 * <pre>{@code
 * try (TcpProxy proxy = TcpProxy.start("127.0.0.1", 6379)) {
 *     connect to 127.0.0.1:proxy.port(); ...; proxy.blackholeExisting();
 * }
 * }</pre>
 */
public final class TcpProxy implements AutoCloseable {
    private final ServerSocket server;
    private final String targetHost;
    private final int targetPort;
    private final List<Link> links = new CopyOnWriteArrayList<>();
    private volatile boolean blackholeNew;

    private TcpProxy(ServerSocket server, String targetHost, int targetPort) {
        this.server = server;
        this.targetHost = targetHost;
        this.targetPort = targetPort;
    }

    /** Starts a proxy on a free port of 127.0.0.1 forwarding to {@code host:port}. */
    public static TcpProxy start(String host, int port) {
        return start(InetAddress.getLoopbackAddress(), 0, host, port);
    }

    /**
     * Starts a proxy on {@code listenAddress:listenPort} (0: a free port) forwarding to {@code host:port}, e.g. on
     * 127.0.0.2 with the server's own port, for a server that tells its clients one address to connect to.
     */
    public static TcpProxy start(InetAddress listenAddress, int listenPort, String host, int port) {
        try {
            ServerSocket server = new ServerSocket(listenPort, 50, listenAddress);
            TcpProxy proxy = new TcpProxy(server, host, port);
            daemon("tcp-proxy-accept-" + server.getLocalPort(), proxy::acceptLoop);
            return proxy;
        } catch (IOException e) {
            throw new UncheckedIOException("could not open a proxy port", e);
        }
    }

    public int port() {
        return server.getLocalPort();
    }

    /** On connections open now, requests still reach the server but its answers are read and discarded. */
    public void blackholeExisting() {
        links.forEach(l -> l.swallowAnswers = true);
    }

    /** Like {@link #blackholeExisting()}, and for every new connection too while {@code on}. */
    public void blackholeAll(boolean on) {
        blackholeNew = on;
        links.forEach(l -> l.swallowAnswers = on);
    }

    /** On connections open now, bytes in both directions are discarded; the sockets stay open. */
    public void partitionExisting() {
        links.forEach(l -> {
            l.swallowAnswers = true;
            l.swallowRequests = true;
        });
    }

    /** Closes every open connection; new ones are accepted normally. */
    public void dropAllConnections() {
        links.forEach(Link::close);
        links.clear();
    }

    @Override
    public void close() {
        try {
            server.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        dropAllConnections();
    }

    private void acceptLoop() {
        while (!server.isClosed()) {
            try {
                Socket client = server.accept();
                Socket upstream = new Socket();
                upstream.connect(new InetSocketAddress(targetHost, targetPort), 5000);
                client.setTcpNoDelay(true);
                upstream.setTcpNoDelay(true);
                Link link = new Link(client, upstream, blackholeNew);
                links.add(link);
                daemon("tcp-proxy-up-" + port(), () -> link.pump(client, upstream, true));
                daemon("tcp-proxy-down-" + port(), () -> link.pump(upstream, client, false));
            } catch (IOException e) {
                if (server.isClosed()) {
                    return;
                }
            }
        }
    }

    private static void daemon(String name, Runnable body) {
        Thread t = new Thread(body, name);
        t.setDaemon(true);
        t.start();
    }

    private static final class Link {
        private final Socket client;
        private final Socket upstream;
        volatile boolean swallowAnswers;
        volatile boolean swallowRequests;

        Link(Socket client, Socket upstream, boolean swallowAnswers) {
            this.client = client;
            this.upstream = upstream;
            this.swallowAnswers = swallowAnswers;
        }

        void pump(Socket from, Socket to, boolean requests) {
            byte[] buffer = new byte[64 * 1024];
            try (InputStream in = from.getInputStream();
                    OutputStream out = to.getOutputStream()) {
                for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
                    if (!(requests ? swallowRequests : swallowAnswers)) {
                        out.write(buffer, 0, n);
                        out.flush();
                    }
                }
            } catch (IOException e) {
                // the other side closed; fall through and close both
            }
            close();
        }

        void close() {
            try {
                client.close();
            } catch (IOException ignored) {
                // closing anyway
            }
            try {
                upstream.close();
            } catch (IOException ignored) {
                // closing anyway
            }
        }
    }
}
