package dev.idem.spring.outbox;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;

/** {@code idem.outbox.*}: the outbox table and the relay's settings (defaults as in {@code OutboxRelay.Builder}). */
@ConfigurationProperties(prefix = "idem.outbox")
public class IdemOutboxProperties {
    /** The outbox table; its shard and relay tables are {@code <table>_shards} and {@code <table>_relays}. */
    private String table = "idem_outbox";

    /** Add the outbox tables to the application's Flyway migrations. */
    private boolean flyway = true;

    private final Relay relay = new Relay();

    public String getTable() {
        return table;
    }

    public void setTable(String table) {
        this.table = table;
    }

    public boolean isFlyway() {
        return flyway;
    }

    public void setFlyway(boolean flyway) {
        this.flyway = flyway;
    }

    public Relay getRelay() {
        return relay;
    }

    /** {@code idem.outbox.relay.*}: started with the context when an {@code OutboxPublisher} bean exists. */
    public static class Relay {
        /** Run the relay in this application. */
        private boolean enabled = true;

        private int shards = 16;
        private int batchSize = 100;
        private Duration pollInterval = Duration.ofMillis(100);
        private Duration lease = Duration.ofSeconds(30);
        private Duration publishTimeout = Duration.ofSeconds(10);
        private Duration retention = Duration.ofDays(7);

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public int getShards() {
            return shards;
        }

        public void setShards(int shards) {
            this.shards = shards;
        }

        public int getBatchSize() {
            return batchSize;
        }

        public void setBatchSize(int batchSize) {
            this.batchSize = batchSize;
        }

        public Duration getPollInterval() {
            return pollInterval;
        }

        public void setPollInterval(Duration pollInterval) {
            this.pollInterval = pollInterval;
        }

        public Duration getLease() {
            return lease;
        }

        public void setLease(Duration lease) {
            this.lease = lease;
        }

        public Duration getPublishTimeout() {
            return publishTimeout;
        }

        public void setPublishTimeout(Duration publishTimeout) {
            this.publishTimeout = publishTimeout;
        }

        public Duration getRetention() {
            return retention;
        }

        public void setRetention(Duration retention) {
            this.retention = retention;
        }
    }
}
