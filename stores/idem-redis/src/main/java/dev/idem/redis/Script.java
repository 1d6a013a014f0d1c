package dev.idem.redis;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The Lua scripts of the store. Each runs as one atomic step on the server. "Now" is the store's clock, sent as ARGV
 * (milliseconds since the epoch), or the server's {@code TIME} when that argument is {@code ""} (server-clock mode);
 * Redis TTLs only collect garbage. Fencing tokens and the arming of a namespace always read the server's {@code
 * TIME}.
 *
 * <p>A record is one string, read with one {@code GET} and written with one {@code SET … PX} (its Redis TTL): {@code
 * <s>|<t>|<u>|<c>|<length of o>|<length of f>|<o><f><r>}, where {@code s} is the state ({@code P} processing,
 * {@code D} done), {@code t} the fencing token, {@code u} the deadline (lease end or retention end), {@code c}
 * claimed-at or completed-at, {@code o} the owner, {@code f} the fingerprint and {@code r} the result (the rest of
 * the string, any bytes). Optional values travel and are stored as {@code "-"} (none) or {@code "+"} followed by the
 * value. A record of the hash format before 0.2.0 (fields {@code s o t u c f r}) is read as well, and rewritten as a
 * string the first time a script writes it.
 *
 * <p>The sentinel ("epoch") of a namespace is {@code <generation>:<random id>} while armed, {@code
 * arming:<server ms>:<random id>} while a store that found the namespace empty waits out the arming delay, or {@code
 * lost:<generation>:<detected-at>} once a store found it missing or replaced. A fresh arming has generation 0; a
 * re-arming takes a generation above every earlier one, so running stores adopt it, while a store that finds an epoch
 * of its own generation or lower that is not its own, or an arming under way, knows that the marks it relied on are
 * gone.
 *
 * <p>Fencing tokens: the counter {@code {prefix:namespace}:fence} holds the last token; a claim hands out {@code
 * max(counter, server ms × 1000) + 1}. The counter only grows on one server; the time floor keeps tokens above those
 * of a server whose last writes were lost (a restart, a promoted replica), as long as the server clocks agree to
 * within the outage and the namespace does not average more than 1000 claims per millisecond.
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
            "local function gen(e) return string.match(e, '^lost:(%d+):') or string.match(e, '^(%d+):') end\n";

    private static final String SERVER_MS = """
            local function serverMs()
              local t = redis.call('TIME')
              return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
            end
            local function int(n) return string.format('%d', n) end
            """;

    /**
     * The record of a key: {@code load(k)} answers {@code s, o, t, u, c, f, r} (t, u and c as numbers) or nothing,
     * {@code save(k, s, o, t, u, c, f, r, ttl)} writes it with its TTL in ms, as the string {@code s .. '|' .. t ..
     * tail(o, u, c, f, r)} (t, u and c formatted with {@code int}). Needs {@link #SERVER_MS} for {@code int}.
     */
    private static final String RECORD = """
            local function load(k)
              local v = redis.pcall('GET', k)
              if not v then return nil end
              if type(v) == 'table' then
                local h = redis.call('HMGET', k, 's', 'o', 't', 'u', 'c', 'f', 'r')
                if not h[1] then return nil end
                return h[1], h[2], tonumber(h[3]), tonumber(h[4]), tonumber(h[5]), h[6], h[7]
              end
              local s, t, u, c, lo, lf, at = string.match(v, '^(%a)|(%d+)|(%d+)|(%d+)|(%d+)|(%d+)|()')
              lo, lf = tonumber(lo), tonumber(lf)
              return s, string.sub(v, at, at + lo - 1), tonumber(t), tonumber(u), tonumber(c),
                string.sub(v, at + lo, at + lo + lf - 1), string.sub(v, at + lo + lf)
            end
            local function tail(o, u, c, f, r)
              return '|' .. u .. '|' .. c .. '|' .. #o .. '|' .. #f .. '|' .. o .. f .. r
            end
            local function save(k, s, o, t, u, c, f, r, ttl)
              redis.call('SET', k, s .. '|' .. int(t) .. tail(o, int(u), int(c), f, r), 'PX', int(ttl))
            end
            """;

    /**
     * KEYS: sentinel, fencing counter, then the records (distinct, sorted). ARGV: the epoch the store expects ({@code
     * ""} before its first use of the namespace), a random id for a fresh arming ({@code ""} when an epoch is
     * expected), now ({@code ""}: the server's), the garbage-collection margin, the highest fencing token the store
     * has handed out under the expected epoch ({@code "0"}: none; a counter below it means a failover lost claims),
     * the arming delay, then {@code "="} and the owner, fingerprint and lease every record shares, or {@code "*"} and
     * per record its owner, fingerprint and lease. With no records it only checks the namespace.
     *
     * <p>Returns {@code {"LOST", marker, 1 if this call detected the loss else 0, now}}, {@code {"ARMING", ms left}}
     * or {@code {"OK", epoch, now, result...}}, a result being the token alone for a free key claimed (its lease
     * runs until now + lease), {@code {"C", token, until}}, {@code {"T", token, until, previous owner}}, {@code {"I",
     * owner, until, fingerprint}} or {@code {"D", completed at, expires at, fingerprint, result}}.
     */
    static final Script CLAIM = of("claim", GEN + SERVER_MS + RECORD + """
            local server = serverMs()
            local now = server
            if ARGV[3] ~= '' then now = tonumber(ARGV[3]) end
            local expected, margin, witnessed, delay = ARGV[1], tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
            local found = redis.call('MGET', KEYS[1], KEYS[2])
            local cur, counter = found[1], tonumber(found[2] or '0')
            local function lose()
              local marker = 'lost:' .. gen(expected) .. ':' .. int(now)
              redis.call('SET', KEYS[1], marker)
              return {'LOST', marker, 1, now}
            end
            local function arm(id)
              cur = '0:' .. id
              redis.call('SET', KEYS[1], cur)
            end
            if not cur then
              if expected ~= '' then return lose() end
              if delay > 0 then
                redis.call('SET', KEYS[1], 'arming:' .. int(server) .. ':' .. ARGV[2])
                return {'ARMING', delay}
              end
              arm(ARGV[2])
            elseif string.sub(cur, 1, 7) == 'arming:' then
              if expected ~= '' then return lose() end
              local since, id = string.match(cur, '^arming:(%d+):(.*)$')
              local left = tonumber(since) + delay - server
              if left > 0 then return {'ARMING', left} end
              arm(id)
            elseif string.sub(cur, 1, 5) == 'lost:' then
              return {'LOST', cur, 0, now}
            elseif expected ~= '' and cur ~= expected and tonumber(gen(cur)) <= tonumber(gen(expected)) then
              return lose()
            elseif cur == expected and witnessed > 0 then
              if counter < witnessed then return lose() end
            end
            local out = {'OK', cur, now}
            if #KEYS == 2 then return out end
            local base = math.max(counter, server * 1000)
            local issued = 0
            local stride = 3
            if ARGV[7] == '=' then stride = 0 end
            local nowText, lastOwner, lastFp, lastLease, untilText, ttlText, rest = int(now)
            -- The counter is raised even when a key fails part-way (one of another Redis type): the tokens already
            -- written must never be handed out again.
            local done, failure = pcall(function()
              for i = 3, #KEYS do
                local k = KEYS[i]
                local a = 7 + (i - 3) * stride
                local owner, fp, lease = ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3])
                local untilMs = now + lease
                local token = base + (issued + 1)
                -- A free key (the common case) is claimed by one SET NX; a taken one is read and decided on. A server
                -- that refuses writes (full, read-only, too few replicas) still answers a done or held key, as a read.
                if lease ~= lastLease or owner ~= lastOwner or fp ~= lastFp then
                  lastOwner, lastFp, lastLease = owner, fp, lease
                  untilText, ttlText = int(untilMs), int(lease + margin)
                  rest = tail(owner, untilText, nowText, fp, '-')
                end
                local set = redis.pcall('SET', k, 'P|' .. int(token) .. rest, 'NX', 'PX', ttlText)
                if type(set) == 'table' and set.ok then
                  issued = issued + 1
                  out[#out + 1] = token
                else
                  local s, o, t, u, c, f, r = load(k)
                  local function put()
                    issued = issued + 1
                    save(k, 'P', owner, token, untilMs, now, fp, '-', lease + margin)
                    return token
                  end
                  if not s or (s == 'D' and now >= u) then
                    out[#out + 1] = {'C', put(), untilMs}
                  elseif s == 'D' then
                    out[#out + 1] = {'D', c, u, f, r}
                  elseif o == owner then
                    save(k, s, o, t, untilMs, c, f, r, lease + margin)
                    out[#out + 1] = {'C', t, untilMs}
                  elseif now < u then
                    out[#out + 1] = {'I', o, u, f}
                  else
                    out[#out + 1] = {'T', put(), untilMs, o}
                  end
                end
              end
            end)
            if issued > 0 then redis.call('SET', KEYS[2], int(base + issued)) end
            if not done then
              -- a server error keeps its own code (WRONGTYPE, OOM...) rather than the ERR of a re-raised Lua error
              if type(failure) == 'string' and string.match(failure, '^%u+ ') then return redis.error_reply(failure) end
              error(failure)
            end
            return out
            """);

    /**
     * The owner check that {@link #COMPLETE}, {@link #RELEASE} and {@link #EXTEND} share, after each defines {@code
     * doneByOwner}: the answer when the record is already done by this very owner (a retry after a lost reply).
     * ARGV[1] owner, [2] now ({@code ""}: the server's).
     */
    private static final String OWNED = SERVER_MS + RECORD + """
            local k = KEYS[1]
            local now
            if ARGV[2] == '' then now = serverMs() else now = tonumber(ARGV[2]) end
            local s, o, t, u, c, f, r = load(k)
            if not s then return 'NOT_FOUND' end
            if s == 'D' then
              if now >= u then
                redis.call('DEL', k)
                return 'NOT_FOUND'
              end
              if o == ARGV[1] then return doneByOwner end
              return 'NOT_OWNER'
            end
            if o ~= ARGV[1] then return 'NOT_OWNER' end
            """;

    /** ARGV[3] retention, [4] margin, [5] result. Completing again as the same owner answers APPLIED, unchanged. */
    static final Script COMPLETE = of("complete", "local doneByOwner = 'APPLIED'\n" + OWNED + """
            save(k, 'D', o, t, now + tonumber(ARGV[3]), now, f, ARGV[5], tonumber(ARGV[3]) + tonumber(ARGV[4]))
            return 'APPLIED'
            """);

    /** A done record is never released, not even by its owner. */
    static final Script RELEASE = of("release", "local doneByOwner = 'NOT_OWNER'\n" + OWNED + """
            redis.call('DEL', k)
            return 'APPLIED'
            """);

    /**
     * ARGV[3] lease, [4] margin. Extending a record its owner has completed answers APPLIED, unchanged: a watchdog tick
     * that races the completion is no lost lease.
     */
    static final Script EXTEND = of("extend", "local doneByOwner = 'APPLIED'\n" + OWNED + """
            save(k, s, o, t, now + tonumber(ARGV[3]), c, f, r, tonumber(ARGV[3]) + tonumber(ARGV[4]))
            return 'APPLIED'
            """);

    /**
     * KEYS: the record. ARGV: now ({@code ""}: the server's). Returns the fields state, owner, token, deadline,
     * fingerprint, result, or an empty list when there is no record or it is done and its retention has ended.
     */
    static final Script LOOKUP = of("lookup", SERVER_MS + RECORD + """
            local now
            if ARGV[1] == '' then now = serverMs() else now = tonumber(ARGV[1]) end
            local s, o, t, u, c, f, r = load(KEYS[1])
            if not s or (s == 'D' and now >= u) then return {} end
            return {s, o, t, u, f, r}
            """);

    /**
     * KEYS: sentinel, fencing counter. ARGV: a random id, the value the caller expects to replace ({@code ""}:
     * whatever is there), the highest fencing token the caller knows of. Writes a new epoch whose generation is above
     * every earlier one, raises the counter to at least that token and the server's ms × 1000, and returns the
     * epoch; returns the current value unchanged (possibly none) when it is not the expected one (another store
     * re-armed first).
     */
    static final Script REARM = of("rearm", GEN + SERVER_MS + """
            local cur = redis.call('GET', KEYS[1])
            if ARGV[2] ~= '' and cur ~= ARGV[2] then return cur end
            local g = serverMs()
            if cur and gen(cur) and tonumber(gen(cur)) >= g then g = tonumber(gen(cur)) + 1 end
            local epoch = int(g) .. ':' .. ARGV[1]
            redis.call('SET', KEYS[1], epoch)
            local counter = math.max(tonumber(redis.call('GET', KEYS[2]) or '0'), g * 1000, tonumber(ARGV[3]))
            redis.call('SET', KEYS[2], int(counter))
            return epoch
            """);
}
