-- Idem idempotency table for H2 (2.x). Times are epoch milliseconds; ids are IdempotencyKey.storageId().
CREATE TABLE IF NOT EXISTS idem_keys (
    id            VARCHAR(193) NOT NULL PRIMARY KEY, -- namespace ':' stored key, at most 193 characters
    state         VARCHAR(10)  NOT NULL,             -- PROCESSING (a lease) or DONE
    owner_token   VARCHAR(64)  NOT NULL,
    fencing_token BIGINT       NOT NULL,
    expires_at    BIGINT       NOT NULL,             -- lease deadline, or end of retention when DONE
    completed_at  BIGINT,
    fingerprint   VARCHAR(255),
    result_data   VARBINARY
);
CREATE INDEX IF NOT EXISTS idem_keys_expires_idx ON idem_keys (expires_at);
-- Lease mode only: fencing tokens.
CREATE SEQUENCE IF NOT EXISTS idem_keys_fencing;
-- Message id node-id leases (JdbcNodeIdLeaseStore): one row per (id space, node id). Times are epoch milliseconds.
CREATE TABLE IF NOT EXISTS idem_node_ids (
    id_space     VARCHAR(64) NOT NULL, -- the generators' id space
    node_id      INTEGER     NOT NULL,
    owner_token  VARCHAR(64),          -- the holder; NULL once released
    expires_at   BIGINT      NOT NULL, -- lease end
    high_water   BIGINT      NOT NULL, -- highest timestamp any holder may have issued
    granted_mark BIGINT      NOT NULL, -- high_water when the current lease was granted
    PRIMARY KEY (id_space, node_id)
);
