package dev.idem.redis;

/**
 * The Lua scripts of {@link RedisNodeIdLeaseStore}, each one atomic step on the server. A space is one hash, {@code
 * KEYS[1]}, with four fields per node id {@code n}: {@code o:n} the owner (absent when free), {@code u:n} the lease's
 * end, {@code g:n} the high-water mark granted with the lease, {@code h:n} the high-water mark. {@code h:n} is
 * written by every call and deleted by none, and the hash has no TTL: the mark outlives every lease. Times are epoch
 * milliseconds from the store's clock (ARGV); numbers are written with {@code %d} so that Lua never writes them in
 * exponent form.
 */
final class NodeIdScripts {
    private NodeIdScripts() {}

    /**
     * ARGV: owner, max node id, now, lease, reserved until. Takes the lowest node id that has no owner or whose lease
     * ended; returns {@code {node id, mark before, lease end}}, or an empty list when every node id is held.
     */
    static final Script ACQUIRE = Script.of("node-id-acquire", """
            local key, owner = KEYS[1], ARGV[1]
            local max, now, lease, reserved = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
            for id = 0, max do
              local n = string.format('%d', id)
              local r = redis.call('HMGET', key, 'o:' .. n, 'u:' .. n, 'h:' .. n)
              if not r[1] or tonumber(r[2]) <= now then
                local mark = tonumber(r[3] or '0')
                local high = mark
                if reserved > high then high = reserved end
                local untilMs = now + lease
                redis.call('HSET', key, 'o:' .. n, owner, 'u:' .. n, string.format('%d', untilMs),
                  'g:' .. n, string.format('%d', mark), 'h:' .. n, string.format('%d', high))
                return {id, mark, untilMs}
              end
            end
            return {}
            """);

    /** The owner check {@link #RENEW} and {@link #RELEASE} share. ARGV[1] node id, [2] owner. */
    private static final String OWNED = """
            local key, n = KEYS[1], ARGV[1]
            local r = redis.call('HMGET', key, 'o:' .. n, 'h:' .. n, 'g:' .. n)
            if r[1] ~= ARGV[2] then
              if r[2] then return 'NOT_OWNER' end
              return 'NOT_FOUND'
            end
            """;

    /** ARGV[3] now, [4] lease, [5] reserved until. */
    static final Script RENEW = Script.of("node-id-renew", OWNED + """
            local high, reserved = tonumber(r[2]), tonumber(ARGV[5])
            if reserved > high then high = reserved end
            redis.call('HSET', key, 'u:' .. n, string.format('%d', tonumber(ARGV[3]) + tonumber(ARGV[4])),
              'h:' .. n, string.format('%d', high))
            return 'APPLIED'
            """);

    /** ARGV[3] now, [4] highest issued. */
    static final Script RELEASE = Script.of("node-id-release", OWNED + """
            local mark, issued = tonumber(r[3] or '0'), tonumber(ARGV[4])
            if issued > mark then mark = issued end
            redis.call('HDEL', key, 'o:' .. n)
            redis.call('HSET', key, 'u:' .. n, ARGV[3], 'g:' .. n, string.format('%d', mark),
              'h:' .. n, string.format('%d', mark))
            return 'APPLIED'
            """);
}
