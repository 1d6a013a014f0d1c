-- Idem outbox for MariaDB (10.5+). Times are epoch milliseconds.
CREATE TABLE IF NOT EXISTS idem_outbox (
    id          BIGINT        NOT NULL AUTO_INCREMENT PRIMARY KEY, -- insertion order: each key's messages are published by it
    message_id  VARCHAR(255)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL, -- travels as the idempotency key header
    destination VARCHAR(255)  NOT NULL,            -- topic, exchange routing key or subject
    message_key VARCHAR(255)  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, -- the ordering key (binary comparison)
    key_hash    INT           NOT NULL,            -- non-negative hash of message_key: the relay's shard is key_hash % shards
    headers     TEXT          NOT NULL,
    payload     LONGBLOB      NOT NULL,
    created_at  BIGINT        NOT NULL,
    retry_at    BIGINT        NOT NULL,            -- 0, or not published before this time (backing off); parked: the largest BIGINT
    attempts    INT           NOT NULL,            -- failed publishes
    refusals    INT           NOT NULL,            -- failed publishes the broker refused (not a timeout): parks at the bound
    last_error  VARCHAR(1000) NULL,
    parked_at   BIGINT        NULL,                -- parked: not published until unparked; blocks its key's later messages
    sent_at     BIGINT        NULL,                -- acknowledged by the broker; purged after the retention
    UNIQUE KEY idem_outbox_message_id_key (message_id),
    INDEX idem_outbox_sent_idx (sent_at, id),
    INDEX idem_outbox_retry_idx (retry_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;
-- Relay ownership: each relay leases shards; only a shard's owner publishes its keys' messages.
CREATE TABLE IF NOT EXISTS idem_outbox_shards (
    shard      INT         NOT NULL PRIMARY KEY,
    owner      VARCHAR(64) NULL,                   -- the relay holding the lease; NULL when free
    expires_at BIGINT      NOT NULL,               -- lease end
    takeovers  BIGINT      NOT NULL                -- how many times the shard changed owner
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;
-- Live relays (heartbeats), so that each takes its fair share of the shards.
CREATE TABLE IF NOT EXISTS idem_outbox_relays (
    relay_id   VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
    expires_at BIGINT      NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;
