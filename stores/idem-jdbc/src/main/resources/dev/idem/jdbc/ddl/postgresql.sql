-- Idem idempotency table for PostgreSQL. Times are epoch milliseconds; ids are IdempotencyKey.storageId().
CREATE TABLE IF NOT EXISTS idem_keys (
    id            VARCHAR(193) COLLATE "C" NOT NULL PRIMARY KEY, -- namespace ':' stored key, at most 193 characters
    state         VARCHAR(10)  NOT NULL,                         -- PROCESSING (a lease) or DONE
    owner_token   VARCHAR(64)  NOT NULL,
    fencing_token BIGINT       NOT NULL,
    expires_at    BIGINT       NOT NULL,                         -- lease deadline, or end of retention when DONE
    completed_at  BIGINT,
    fingerprint   VARCHAR(255),
    result_data   BYTEA
);
CREATE INDEX IF NOT EXISTS idem_keys_expires_idx ON idem_keys (expires_at);
-- Lease mode only: fencing tokens.
CREATE SEQUENCE IF NOT EXISTS idem_keys_fencing;
