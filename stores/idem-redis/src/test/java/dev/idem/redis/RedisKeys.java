package dev.idem.redis;

import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;

/** Test helper: deletes the keys a test left behind; finds a port where no Redis listens. */
final class RedisKeys {
    private RedisKeys() {}

    static void delete(String url, String key) {
        RedisClient client = RedisClient.create(url);
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            c.sync().unlink(key);
        } finally {
            client.shutdown();
        }
    }

    static void deleteAll(String url, String prefix) {
        RedisClient client = RedisClient.create(url);
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            RedisCommands<String, String> redis = c.sync();
            ScanCursor cursor = ScanCursor.INITIAL;
            do {
                KeyScanCursor<String> page = redis.scan(
                        cursor, ScanArgs.Builder.matches("{" + prefix + ":*").limit(1000));
                if (!page.getKeys().isEmpty()) {
                    redis.unlink(page.getKeys().toArray(String[]::new));
                }
                cursor = page;
            } while (!cursor.isFinished());
        } finally {
            client.shutdown();
        }
    }

    /** A Redis URL on a local port nobody listens on. */
    static String unreachableUrl() {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return "redis://127.0.0.1:" + s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
