-- The application's own tables. Idem's table comes with the starter (a repeatable Flyway migration).
CREATE TABLE account (id VARCHAR(64) PRIMARY KEY, balance_cents BIGINT NOT NULL);
CREATE TABLE payment (id VARCHAR(128) PRIMARY KEY, account_id VARCHAR(64) NOT NULL, amount_cents BIGINT NOT NULL);
