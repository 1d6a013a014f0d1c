-- Idem idempotency table for MariaDB (10.5+) and MySQL (8.0+). Times are epoch milliseconds.
-- id holds the UTF-8 bytes of IdempotencyKey.storageId() (at most 193 bytes): binary comparison, no pad-space
-- collation surprises, and far below InnoDB's 3072-byte index limit.
CREATE TABLE IF NOT EXISTS idem_keys (
    id            VARBINARY(193) NOT NULL PRIMARY KEY,
    state         VARCHAR(10)    NOT NULL,  -- PROCESSING (a lease) or DONE
    owner_token   VARCHAR(64)    NOT NULL,
    fencing_token BIGINT         NOT NULL,
    expires_at    BIGINT         NOT NULL,  -- lease deadline, or end of retention when DONE
    completed_at  BIGINT         NULL,
    fingerprint   VARCHAR(255)   NULL,
    result_data   BLOB           NULL,
    INDEX idem_keys_expires_idx (expires_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;
-- Lease mode only (MariaDB 10.3+; MySQL has no sequences, so lease mode is MariaDB-only): fencing tokens.
CREATE SEQUENCE IF NOT EXISTS idem_keys_fencing;
-- Message id node-id leases (JdbcNodeIdLeaseStore): one row per (id space, node id). Times are epoch milliseconds.
CREATE TABLE IF NOT EXISTS idem_node_ids (
    id_space     VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, -- the generators' id space
    node_id      INT         NOT NULL,
    owner_token  VARCHAR(64) NULL,      -- the holder; NULL once released
    expires_at   BIGINT      NOT NULL,  -- lease end
    high_water   BIGINT      NOT NULL,  -- highest timestamp any holder may have issued
    granted_mark BIGINT      NOT NULL,  -- high_water when the current lease was granted
    PRIMARY KEY (id_space, node_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;
