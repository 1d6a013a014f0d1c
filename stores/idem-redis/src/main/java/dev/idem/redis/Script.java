package dev.idem.redis;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The Lua scripts of the store. Each runs as one atomic step on the server. Deadlines and "now" come from the
 * store's clock as ARGV (milliseconds since the epoch); Redis TTLs only collect garbage.
 *
 * <p>A record is a hash: {@code s} state ({@code P} processing, {@code D} done), {@code o} owner, {@code t} fencing
 * token, {@code u} deadline (lease end or retention end), {@code c} claimed-at or completed-at, {@code f} fingerprint
 * (absent when none), {@code r} result (absent when none). Optional arguments travel as {@code "-"} (none) or
 * {@code "+"} followed by the value.
 *
 * <p>The sentinel ("epoch") of a namespace is {@code <generation>:<random id>} while armed, or {@code
 * lost:<generation>:<detected-at>} once a store found it missing or replaced. A fresh arming has generation 0; a
 * re-arming takes a generation above every earlier one, so running stores adopt it, while a store that finds an epoch
 * of its own generation or lower that is not its own knows that the marks it relied on are gone.
 */
record Script(String name, byte[] source, String sha) {

    static Script of(String name, String source) {
        byte[] bytes = source.getBytes(StandardCharsets.UTF_8);
        try {
            String sha =
                    HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(bytes));
            return new Script(name, bytes, sha);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK has no SHA-1", e);
        }
    }

    private static final String GEN =
            "local function gen(e) return string.match(e, '^lost:(%d+):') or" + " string.match(e, '^(%d+):') end\n";

    /**
     * KEYS: sentinel, fencing counter, then the records (distinct, sorted). ARGV: the epoch the store expects
     * ({@code ""} before its first use of the namespace), the epoch to write when arming a fresh namespace, now,
     * the counter's starting value, the garbage-collection margin, the highest fencing token the store has handed out
     * under the expected epoch ({@code "0"}: none; a counter below it means a failover lost claims), then per record:
     * owner, fingerprint, lease.
     * Returns {@code {"LOST", marker}} or {@code {"OK", epoch, result...}}, a result being {@code {"C", token,
     * until}}, {@code {"T", token, until, previous owner}}, {@code {"I", owner, until, fingerprint}} or {@code {"D",
     * completed at, expires at, fingerprint, result}}.
     */
    static final Script CLAIM = of("claim", GEN + """
            local expected, now = ARGV[1], tonumber(ARGV[3])
            local margin = tonumber(ARGV[5])
            local cur = redis.call('GET', KEYS[1])
            local function lose()
              local marker = 'lost:' .. gen(expected) .. ':' .. ARGV[3]
              redis.call('SET', KEYS[1], marker)
              return {'LOST', marker}
            end
            if not cur then
              if expected ~= '' then return lose() end
              cur = ARGV[2]
              redis.call('SET', KEYS[1], cur)
            elseif string.sub(cur, 1, 5) == 'lost:' then
              return {'LOST', cur}
            elseif expected ~= '' and cur ~= expected and tonumber(gen(cur)) <= tonumber(gen(expected)) then
              return lose()
            elseif cur == expected and ARGV[6] ~= '0' then
              local counter = redis.call('GET', KEYS[2])
              if not counter or tonumber(counter) < tonumber(ARGV[6]) then return lose() end
            end
            local function nextToken()
              if redis.call('EXISTS', KEYS[2]) == 0 then redis.call('SET', KEYS[2], ARGV[4]) end
              return redis.call('INCR', KEYS[2])
            end
            local out = {'OK', cur}
            for i = 3, #KEYS do
              local k = KEYS[i]
              local a = 6 + (i - 3) * 3
              local owner, fp, lease = ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3])
              local untilMs = now + lease
              local r = redis.call('HMGET', k, 's', 'o', 't', 'u', 'c', 'f', 'r')
              local function put(token)
                redis.call('DEL', k)
                redis.call('HSET', k, 's', 'P', 'o', owner, 't', token, 'u', ARGV[3] + lease, 'c', ARGV[3])
                if fp ~= '-' then redis.call('HSET', k, 'f', string.sub(fp, 2)) end
                redis.call('PEXPIRE', k, lease + margin)
              end
              if not r[1] or (r[1] == 'D' and now >= tonumber(r[4])) then
                local token = nextToken()
                put(token)
                out[#out + 1] = {'C', token, untilMs}
              elseif r[1] == 'D' then
                out[#out + 1] = {'D', tonumber(r[5]), tonumber(r[4]), r[6], r[7]}
              elseif r[2] == owner then
                redis.call('HSET', k, 'u', ARGV[3] + lease)
                redis.call('PEXPIRE', k, lease + margin)
                out[#out + 1] = {'C', tonumber(r[3]), untilMs}
              elseif now < tonumber(r[4]) then
                out[#out + 1] = {'I', r[2], tonumber(r[4]), r[6]}
              else
                local token = nextToken()
                put(token)
                out[#out + 1] = {'T', token, untilMs, r[2]}
              end
            end
            return out
            """);

    /** The owner check that {@link #COMPLETE}, {@link #RELEASE} and {@link #EXTEND} share. ARGV[1] owner, [2] now. */
    private static final String OWNED = """
            local k, now = KEYS[1], tonumber(ARGV[2])
            local r = redis.call('HMGET', k, 's', 'o', 'u')
            if not r[1] then return 'NOT_FOUND' end
            if r[1] == 'D' then
              if now < tonumber(r[3]) then return 'NOT_OWNER' end
              redis.call('DEL', k)
              return 'NOT_FOUND'
            end
            if r[2] ~= ARGV[1] then return 'NOT_OWNER' end
            """;

    /** ARGV[3] retention, [4] margin, [5] result. */
    static final Script COMPLETE = of("complete", OWNED + """
            redis.call('HSET', k, 's', 'D', 'u', ARGV[2] + ARGV[3], 'c', ARGV[2])
            if ARGV[5] ~= '-' then redis.call('HSET', k, 'r', string.sub(ARGV[5], 2)) end
            redis.call('PEXPIRE', k, ARGV[3] + ARGV[4])
            return 'APPLIED'
            """);

    static final Script RELEASE = of("release", OWNED + """
            redis.call('DEL', k)
            return 'APPLIED'
            """);

    /** ARGV[3] lease, [4] margin. */
    static final Script EXTEND = of("extend", OWNED + """
            redis.call('HSET', k, 'u', ARGV[2] + ARGV[3])
            redis.call('PEXPIRE', k, ARGV[3] + ARGV[4])
            return 'APPLIED'
            """);

    /**
     * KEYS: sentinel. ARGV: now, a random id, the value the caller expects to replace ({@code ""}: whatever is
     * there). Writes a new epoch whose generation is above every earlier one and returns it; returns the current value
     * unchanged when it is not the expected one (another store re-armed first).
     */
    static final Script REARM = of("rearm", GEN + """
            local cur = redis.call('GET', KEYS[1])
            if ARGV[3] ~= '' and cur ~= ARGV[3] then return cur end
            local g = tonumber(ARGV[1])
            if cur and gen(cur) and tonumber(gen(cur)) >= g then g = tonumber(gen(cur)) + 1 end
            local epoch = string.format('%d', g) .. ':' .. ARGV[2]
            redis.call('SET', KEYS[1], epoch)
            return epoch
            """);
}
