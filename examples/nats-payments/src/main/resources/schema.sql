-- The application's own tables. Idem's table (idem_keys) is created by the inbox (createTableIfMissing).
CREATE TABLE IF NOT EXISTS account (id VARCHAR(64) PRIMARY KEY, balance_cents BIGINT NOT NULL);
-- No unique key on purpose: the guard, not a constraint, keeps a payment from being booked twice.
CREATE TABLE IF NOT EXISTS payment (payment_id VARCHAR(128) NOT NULL, account_id VARCHAR(64) NOT NULL, amount_cents BIGINT NOT NULL)
