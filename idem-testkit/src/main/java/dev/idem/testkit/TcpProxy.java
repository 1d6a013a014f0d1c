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
    private final Upstream upstream;
    private final List<Link> links = new CopyOnWriteArrayList<>();
    private final Object cut = new Object();
    private final ServerSocket server;
    private volatile boolean blackholeNew;
    private long cuts;

    /** Opens the proxy's connection to the server for a client that connected. */
    @FunctionalInterface
    interface Upstream {
        Socket connect() throws IOException, InterruptedException;
    }

    private TcpProxy(ServerSocket server, Upstream upstream) {
        this.server = server;
        this.upstream = upstream;
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
        return start(listenAddress, listenPort, () -> {
            Socket socket = new Socket();
            socket.connect(new InetSocketAddress(host, port), 5000);
            return socket;
        });
    }

    static TcpProxy start(InetAddress listenAddress, int listenPort, Upstream upstream) {
        try {
            TcpProxy proxy = new TcpProxy(new ServerSocket(listenPort, 50, listenAddress), upstream);
            daemon("tcp-proxy-accept-" + proxy.port(), proxy::acceptLoop);
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

    /**
     * Closes every connection the proxy has accepted, also one it is still connecting to the server while this runs;
     * new ones are accepted normally.
     */
    public void dropAllConnections() {
        List<Link> open;
        synchronized (cut) {
            cuts++;
            open = List.copyOf(links);
            links.clear();
        }
        open.forEach(Link::close);
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
                long cutsAtAccept;
                synchronized (cut) {
                    cutsAtAccept = cuts;
                }
                Socket target = connectFor(client);
                client.setTcpNoDelay(true);
                target.setTcpNoDelay(true);
                Link link = new Link(client, target, blackholeNew);
                synchronized (cut) {
                    if (cuts != cutsAtAccept) {
                        link.close();
                        continue;
                    }
                    links.add(link);
                }
                daemon("tcp-proxy-up-" + port(), () -> link.pump(client, target, true));
                daemon("tcp-proxy-down-" + port(), () -> link.pump(target, client, false));
            } catch (IOException e) {
                if (server.isClosed()) {
                    return;
                }
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /** The server's side of {@code client}'s link; when the server cannot be reached, {@code client} is closed. */
    private Socket connectFor(Socket client) throws IOException, InterruptedException {
        try {
            return upstream.connect();
        } catch (IOException | InterruptedException e) {
            client.close();
            throw e;
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
