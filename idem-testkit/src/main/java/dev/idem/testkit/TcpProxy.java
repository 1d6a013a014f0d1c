package dev.idem.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A tiny TCP proxy on 127.0.0.1 that a test puts between a client and a real server to lose responses on purpose:
 * {@link #blackholeExisting()} swallows what the server sends on the connections open now (requests still arrive,
 * acknowledgements never do), {@link #blackholeAll(boolean)} does so for new connections too, {@link
 * #partitionExisting()} swallows both directions while keeping the sockets open. All threads are daemons.
 * Thread-safe.
 */
public final class TcpProxy implements AutoCloseable {
    private final ServerSocket server;
    private final InetSocketAddress target;
    private final List<Link> links = new CopyOnWriteArrayList<>();
    private volatile boolean blackholeNew;

    private TcpProxy(ServerSocket server, InetSocketAddress target) {
        this.server = server;
        this.target = target;
    }

    /** A proxy on a free port of 127.0.0.1 forwarding to {@code targetHost:targetPort}. */
    public static TcpProxy start(String targetHost, int targetPort) {
        try {
            ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
            TcpProxy proxy = new TcpProxy(server, new InetSocketAddress(targetHost, targetPort));
            daemon("tcp-proxy-accept-" + server.getLocalPort(), proxy::acceptLoop)
                    .start();
            return proxy;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open a proxy port on 127.0.0.1", e);
        }
    }

    public int port() {
        return server.getLocalPort();
    }

    /** Server-to-client bytes on the connections open now are read and discarded; new connections pass. */
    public void blackholeExisting() {
        links.forEach(link -> link.downstreamLost = true);
    }

    /** Like {@link #blackholeExisting()}, and also for connections opened while {@code on}. */
    public void blackholeAll(boolean on) {
        blackholeNew = on;
        links.forEach(link -> link.downstreamLost = on);
    }

    /** Both directions of the connections open now are discarded; the sockets stay open (missed heartbeats). */
    public void partitionExisting() {
        links.forEach(link -> {
            link.downstreamLost = true;
            link.upstreamLost = true;
        });
    }

    /** Closes every open connection; the client reconnects through the proxy. */
    public void dropAllConnections() {
        links.forEach(Link::close);
    }

    @Override
    public void close() {
        try {
            server.close();
        } catch (IOException ignored) {
            // closing a listening socket we own: nothing to recover
        }
        dropAllConnections();
    }

    private void acceptLoop() {
        while (!server.isClosed()) {
            try {
                Socket client = server.accept();
                Socket upstream = new Socket();
                upstream.connect(target, 5000);
                client.setTcpNoDelay(true);
                upstream.setTcpNoDelay(true);
                Link link = new Link(client, upstream);
                link.downstreamLost = blackholeNew;
                links.add(link);
                daemon("tcp-proxy-up", () -> pump(link, client, upstream, true)).start();
                daemon("tcp-proxy-down", () -> pump(link, upstream, client, false))
                        .start();
            } catch (IOException e) {
                if (server.isClosed()) {
                    return;
                }
            }
        }
    }

    private void pump(Link link, Socket from, Socket to, boolean upstream) {
        byte[] buffer = new byte[64 * 1024];
        try (InputStream in = from.getInputStream();
                OutputStream out = to.getOutputStream()) {
            int n;
            while ((n = in.read(buffer)) >= 0) {
                if (!(upstream ? link.upstreamLost : link.downstreamLost)) {
                    out.write(buffer, 0, n);
                    out.flush();
                }
            }
        } catch (SocketException e) {
            // the other pump or dropAllConnections() closed the link
        } catch (IOException e) {
            // the peer went away
        } finally {
            link.close();
            links.remove(link);
        }
    }

    private static Thread daemon(String name, Runnable body) {
        Thread t = new Thread(body, name);
        t.setDaemon(true);
        return t;
    }

    private static final class Link {
        final Socket client;
        final Socket upstream;
        volatile boolean downstreamLost;
        volatile boolean upstreamLost;

        Link(Socket client, Socket upstream) {
            this.client = client;
            this.upstream = upstream;
        }

        void close() {
            try {
                client.close();
            } catch (IOException ignored) {
                // already closed
            }
            try {
                upstream.close();
            } catch (IOException ignored) {
                // already closed
            }
        }
    }
}
