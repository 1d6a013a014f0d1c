package dev.idem.testsupport;

import java.io.FilterInputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.util.concurrent.atomic.LongAdder;
import javax.net.SocketFactory;
import org.jspecify.annotations.Nullable;

/**
 * Counts round trips on the wire: the JDBC drivers' {@code socketFactory} connection property (pgjdbc and MariaDB
 * Connector/J) names this class, and each of its sockets counts a round trip at the first write after a read (a
 * request that follows a reply). The count is kept per calling thread as well ({@link #onThisThread()}), since JDBC
 * drivers do their I/O on the caller's thread: the harness charges a delivery with what its handling cost.
 */
public final class CountingSocketFactory extends SocketFactory {
    private static final LongAdder TOTAL = new LongAdder();
    private static final ThreadLocal<long[]> PER_THREAD = ThreadLocal.withInitial(() -> new long[1]);

    /** Instantiated by the drivers through reflection. */
    public CountingSocketFactory() {}

    /** Round trips of every counted connection so far. */
    public static long total() {
        return TOTAL.sum();
    }

    /** Round trips the calling thread made so far. */
    public static long onThisThread() {
        return PER_THREAD.get()[0];
    }

    /** The connection property that makes a driver count: append to a PostgreSQL or MariaDB JDBC URL. */
    public static String urlWithCounting(String url) {
        return url + (url.contains("?") ? "&" : "?") + "socketFactory=" + CountingSocketFactory.class.getName();
    }

    @Override
    public Socket createSocket() {
        return new CountingSocket();
    }

    @Override
    public Socket createSocket(String host, int port) throws IOException {
        Socket s = new CountingSocket();
        s.connect(new java.net.InetSocketAddress(host, port));
        return s;
    }

    @Override
    public Socket createSocket(String host, int port, InetAddress localHost, int localPort) throws IOException {
        Socket s = new CountingSocket();
        s.bind(new java.net.InetSocketAddress(localHost, localPort));
        s.connect(new java.net.InetSocketAddress(host, port));
        return s;
    }

    @Override
    public Socket createSocket(InetAddress host, int port) throws IOException {
        Socket s = new CountingSocket();
        s.connect(new java.net.InetSocketAddress(host, port));
        return s;
    }

    @Override
    public Socket createSocket(InetAddress address, int port, InetAddress localAddress, int localPort)
            throws IOException {
        Socket s = new CountingSocket();
        s.bind(new java.net.InetSocketAddress(localAddress, localPort));
        s.connect(new java.net.InetSocketAddress(address, port));
        return s;
    }

    /** A plain socket whose streams note when a request follows a reply. */
    private static final class CountingSocket extends Socket {
        private volatile boolean replied = true;
        private @Nullable InputStream in;
        private @Nullable OutputStream out;

        @Override
        public synchronized InputStream getInputStream() throws IOException {
            InputStream counted = in;
            if (counted == null) {
                counted = new FilterInputStream(super.getInputStream()) {
                    @Override
                    public int read() throws IOException {
                        int b = super.read();
                        replied = true;
                        return b;
                    }

                    @Override
                    public int read(byte[] b, int off, int len) throws IOException {
                        int n = super.read(b, off, len);
                        replied = true;
                        return n;
                    }
                };
                in = counted;
            }
            return counted;
        }

        @Override
        public synchronized OutputStream getOutputStream() throws IOException {
            OutputStream counted = out;
            if (counted == null) {
                OutputStream raw = super.getOutputStream();
                counted = new FilterOutputStream(raw) {
                    @Override
                    public void write(int b) throws IOException {
                        request();
                        raw.write(b);
                    }

                    @Override
                    public void write(byte[] b, int off, int len) throws IOException {
                        request();
                        raw.write(b, off, len);
                    }
                };
                out = counted;
            }
            return counted;
        }

        private void request() {
            if (replied) {
                replied = false;
                TOTAL.increment();
                PER_THREAD.get()[0]++;
            }
        }
    }
}
