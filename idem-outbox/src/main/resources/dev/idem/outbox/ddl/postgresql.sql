-- Idem outbox for PostgreSQL. Times are epoch milliseconds.
CREATE TABLE IF NOT EXISTS idem_outbox (
    id          BIGSERIAL    NOT NULL PRIMARY KEY,  -- insertion order: the relay publishes each key's messages by it
    message_id  VARCHAR(255) COLLATE "C" NOT NULL,  -- travels as the idempotency key header
    destination VARCHAR(255) NOT NULL,              -- topic, exchange routing key or subject
    message_key VARCHAR(255) COLLATE "C" NOT NULL,  -- the ordering key (and the broker's message key)
    key_hash    INTEGER      NOT NULL,              -- non-negative hash of message_key: the relay's shard is key_hash % shards
    headers     TEXT         NOT NULL,
    payload     BYTEA        NOT NULL,
    created_at  BIGINT       NOT NULL,
    retry_at    BIGINT       NOT NULL,              -- 0, or not published before this time (backing off); parked: the largest BIGINT
    attempts    INTEGER      NOT NULL,              -- failed publishes
    refusals    INTEGER      NOT NULL,              -- failed publishes the broker refused (not a timeout): parks at the bound
    last_error  VARCHAR(1000),
    parked_at   BIGINT,                             -- parked: not published until unparked; blocks its key's later messages
    sent_at     BIGINT,                             -- acknowledged by the broker; purged after the retention
    CONSTRAINT idem_outbox_message_id_key UNIQUE (message_id)
);
CREATE INDEX IF NOT EXISTS idem_outbox_sent_idx ON idem_outbox (sent_at, id);
CREATE INDEX IF NOT EXISTS idem_outbox_retry_idx ON idem_outbox (retry_at);
-- Relay ownership: each relay leases shards; only a shard's owner publishes its keys' messages.
CREATE TABLE IF NOT EXISTS idem_outbox_shards (
    shard      INTEGER     NOT NULL PRIMARY KEY,
    owner      VARCHAR(64),                         -- the relay holding the lease; NULL when free
    expires_at BIGINT      NOT NULL,                -- lease end
    takeovers  BIGINT      NOT NULL                 -- how many times the shard changed owner
);
-- Live relays (heartbeats), so that each takes its fair share of the shards.
CREATE TABLE IF NOT EXISTS idem_outbox_relays (
    relay_id   VARCHAR(64) NOT NULL PRIMARY KEY,
    expires_at BIGINT      NOT NULL
);
