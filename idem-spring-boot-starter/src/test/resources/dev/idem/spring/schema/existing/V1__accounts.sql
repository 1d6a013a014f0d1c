-- The application's schema version 1, applied before Flyway was introduced (by hand, or by another tool).
CREATE TABLE account (id VARCHAR(64) PRIMARY KEY, balance_cents BIGINT NOT NULL);
