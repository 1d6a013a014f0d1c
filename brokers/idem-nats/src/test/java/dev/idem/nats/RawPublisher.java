package dev.idem.nats;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;

/**
 * Publishes a message whose header bytes are exactly as given, over the plain NATS protocol ({@code HPUB}): what
 * any client (or a Go producer) may send, and what jnats itself cannot, since it writes header values from strings.
 */
final class RawPublisher {
    private RawPublisher() {}

    /** Publishes {@code data} to {@code subject} with one header {@code name: value} of raw bytes. */
    static void publish(String url, String subject, String name, byte[] value, byte[] data) throws IOException {
        URI server = URI.create(url);
        try (Socket socket = new Socket(server.getHost(), server.getPort())) {
            socket.setSoTimeout(10_000);
            InputStream in = socket.getInputStream();
            OutputStream out = socket.getOutputStream();
            readLine(in); // INFO
            ByteArrayOutputStream headers = new ByteArrayOutputStream();
            headers.writeBytes(ascii("NATS/1.0\r\n" + name + ": "));
            headers.writeBytes(value);
            headers.writeBytes(ascii("\r\n\r\n"));
            ByteArrayOutputStream frame = new ByteArrayOutputStream();
            frame.writeBytes(ascii("CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":true}\r\n"));
            frame.writeBytes(
                    ascii("HPUB " + subject + " " + headers.size() + " " + (headers.size() + data.length) + "\r\n"));
            frame.writeBytes(headers.toByteArray());
            frame.writeBytes(data);
            frame.writeBytes(ascii("\r\nPING\r\n"));
            out.write(frame.toByteArray());
            out.flush();
            for (String line = readLine(in); !line.equals("PONG"); line = readLine(in)) {
                if (line.startsWith("-ERR")) {
                    throw new IOException("the server refused the raw publish: " + line);
                }
            }
        }
    }

    private static byte[] ascii(String text) {
        return text.getBytes(StandardCharsets.US_ASCII);
    }

    private static String readLine(InputStream in) throws IOException {
        StringBuilder line = new StringBuilder();
        for (int c = in.read(); c != '\n'; c = in.read()) {
            if (c < 0) {
                throw new IOException("the server closed the connection after: " + line);
            }
            if (c != '\r') {
                line.append((char) c);
            }
        }
        return line.toString();
    }
}
