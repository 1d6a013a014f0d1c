-- The application's own tables. Idem's table comes with the starter (a repeatable Flyway migration).
CREATE TABLE account (id VARCHAR(64) PRIMARY KEY, balance_cents BIGINT NOT NULL);
-- No unique key on purpose: the guard, not a constraint, keeps a payment from being booked twice.
CREATE TABLE payment (payment_id VARCHAR(128) NOT NULL, account_id VARCHAR(64) NOT NULL, amount_cents BIGINT NOT NULL);
