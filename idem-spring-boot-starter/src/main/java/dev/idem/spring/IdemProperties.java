package dev.idem.spring;

import dev.idem.RetryPolicy;
import dev.idem.rocketmq.DelayLevels;
import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

/** The {@code idem.*} settings of the starter. Every setting has a default; see docs/spring-boot.md. */
@ConfigurationProperties("idem")
public class IdemProperties {

    /** The namespace of @Idempotent methods that name none, e.g. the consumer group. */
    private @Nullable String namespace;

    /** How long a lease-store claim holds before another consumer may take it over. */
    private Duration lease = Duration.ofSeconds(30);

    /** How long a mark is kept; a copy arriving later runs again. */
    private Duration retention = Duration.ofDays(7);

    private final Jdbc jdbc = new Jdbc();
    private final Redis redis = new Redis();
    private final Kafka kafka = new Kafka();
    private final Rabbit rabbit = new Rabbit();
    private final RocketMQ rocketmq = new RocketMQ();

    public @Nullable String getNamespace() {
        return namespace;
    }

    public void setNamespace(@Nullable String namespace) {
        this.namespace = namespace;
    }

    public Duration getLease() {
        return lease;
    }

    public void setLease(Duration lease) {
        this.lease = lease;
    }

    public Duration getRetention() {
        return retention;
    }

    public void setRetention(Duration retention) {
        this.retention = retention;
    }

    public Jdbc getJdbc() {
        return jdbc;
    }

    public Redis getRedis() {
        return redis;
    }

    public Kafka getKafka() {
        return kafka;
    }

    public Rabbit getRabbit() {
        return rabbit;
    }

    public RocketMQ getRocketmq() {
        return rocketmq;
    }

    /** The database: the inbox of transactional calls, the lease store when there is no Redis, the purge. */
    public static class Jdbc {
        /** The idempotency table (created by the Flyway/Liquibase migration). */
        private String table = "idem_keys";

        /** How long a copy waits for an uncommitted copy of the same key before it ends IN_PROGRESS. */
        private Duration lockWait = Duration.ofSeconds(10);

        /** Create the table on first use: for demos and tests; use the migration in production. */
        private boolean createTableIfMissing = false;

        /** Use the database as the lease store for calls outside a transaction when there is no Redis store. */
        private boolean leaseStore = true;

        /** How often expired marks are deleted; zero turns the scheduled purge off. */
        private Duration purgeInterval = Duration.ofHours(1);

        /** Add Idem's tables to the application's Flyway migrations (a repeatable migration). */
        private boolean flyway = true;

        public boolean isFlyway() {
            return flyway;
        }

        public void setFlyway(boolean flyway) {
            this.flyway = flyway;
        }

        public String getTable() {
            return table;
        }

        public void setTable(String table) {
            this.table = table;
        }

        public Duration getLockWait() {
            return lockWait;
        }

        public void setLockWait(Duration lockWait) {
            this.lockWait = lockWait;
        }

        public boolean isCreateTableIfMissing() {
            return createTableIfMissing;
        }

        public void setCreateTableIfMissing(boolean createTableIfMissing) {
            this.createTableIfMissing = createTableIfMissing;
        }

        public boolean isLeaseStore() {
            return leaseStore;
        }

        public void setLeaseStore(boolean leaseStore) {
            this.leaseStore = leaseStore;
        }

        public Duration getPurgeInterval() {
            return purgeInterval;
        }

        public void setPurgeInterval(Duration purgeInterval) {
            this.purgeInterval = purgeInterval;
        }
    }

    /** The Redis lease store. */
    public static class Redis {
        /**
         * Where Redis is, e.g. redis://127.0.0.1:6379; when unset, the application's Lettuce connection (if any) is
         * used.
         */
        private @Nullable String uri;

        /** The first part of every Redis key Idem writes. */
        private String prefix = "idem";

        public @Nullable String getUri() {
            return uri;
        }

        public void setUri(@Nullable String uri) {
            this.uri = uri;
        }

        public String getPrefix() {
            return prefix;
        }

        public void setPrefix(String prefix) {
            this.prefix = prefix;
        }
    }

    /** Back-off and bound of redeliveries, shared by the spring-kafka, spring-rabbit and rocketmq-spring settings. */
    public static class Retries {
        /** Delay before the next delivery of a message whose outcome was OUT_OF_ORDER or FAILED, at first. */
        private Duration initialDelay = Duration.ofMillis(200);

        /** Growth of that delay per attempt. */
        private double multiplier = 2.0;

        /** Cap on any delay (spring-kafka: keep it well below max.poll.interval.ms). */
        private Duration maxDelay = Duration.ofSeconds(30);

        /** Deliveries of an OUT_OF_ORDER or FAILED message before it is dead-lettered. IN_PROGRESS never counts. */
        private int maxAttempts = 10;

        /** Fraction by which each delay is randomly shortened or lengthened. */
        private double jitter = 0.2;

        /** These settings as Idem's retry policy. */
        public RetryPolicy retryPolicy() {
            return RetryPolicy.builder()
                    .initialDelay(initialDelay)
                    .multiplier(multiplier)
                    .maxDelay(maxDelay)
                    .maxAttempts(maxAttempts)
                    .jitter(jitter)
                    .build();
        }

        public Duration getInitialDelay() {
            return initialDelay;
        }

        public void setInitialDelay(Duration initialDelay) {
            this.initialDelay = initialDelay;
        }

        public double getMultiplier() {
            return multiplier;
        }

        public void setMultiplier(double multiplier) {
            this.multiplier = multiplier;
        }

        public Duration getMaxDelay() {
            return maxDelay;
        }

        public void setMaxDelay(Duration maxDelay) {
            this.maxDelay = maxDelay;
        }

        public int getMaxAttempts() {
            return maxAttempts;
        }

        public void setMaxAttempts(int maxAttempts) {
            this.maxAttempts = maxAttempts;
        }

        public double getJitter() {
            return jitter;
        }

        public void setJitter(double jitter) {
            this.jitter = jitter;
        }
    }

    /** The spring-kafka error handler the starter declares (unless the application declares a CommonErrorHandler). */
    public static class Kafka extends Retries {
        /** Declare the error handler. */
        private boolean errorHandler = true;

        /** Publish records that are dead-lettered to {@code <topic>-dlt} (needs a KafkaTemplate). */
        private boolean deadLetter = true;

        public boolean isErrorHandler() {
            return errorHandler;
        }

        public void setErrorHandler(boolean errorHandler) {
            this.errorHandler = errorHandler;
        }

        public boolean isDeadLetter() {
            return deadLetter;
        }

        public void setDeadLetter(boolean deadLetter) {
            this.deadLetter = deadLetter;
        }
    }

    /**
     * Redeliveries and dead letters of {@code @RabbitListener} methods guarded by {@code @Idempotent}, through
     * idem-rabbitmq's retry queue ({@code <queue>.retry}) and dead-letter exchange ({@code <queue>.dlx}).
     */
    public static class Rabbit extends Retries {
        /** Add Idem's advice to Spring Boot's Rabbit listener container factories. */
        private boolean advice = true;

        /** How long to wait for the broker to confirm a retry copy or a dead letter before the ack. */
        private Duration confirmTimeout = Duration.ofSeconds(10);

        public boolean isAdvice() {
            return advice;
        }

        public void setAdvice(boolean advice) {
            this.advice = advice;
        }

        public Duration getConfirmTimeout() {
            return confirmTimeout;
        }

        public void setConfirmTimeout(Duration confirmTimeout) {
            this.confirmTimeout = confirmTimeout;
        }
    }

    /**
     * Redeliveries and dead letters of {@code @RocketMQMessageListener}s whose {@code onMessage} is {@code @Idempotent},
     * through idem-rocketmq's listeners ({@code %RETRY%<group>}, {@code %DLQ%<group>} with the reason).
     */
    public static class RocketMQ extends Retries {
        /** Replace the message handling of the containers of {@code @Idempotent} listeners with idem-rocketmq's. */
        private boolean listener = true;

        /**
         * The broker's {@code messageDelayLevel} table, from which a retry's delay level is chosen (the first at least
         * as long as the back-off). Default: RocketMQ's own.
         */
        private String delayLevels = DelayLevels.ROCKETMQ_DEFAULT;

        public boolean isListener() {
            return listener;
        }

        public void setListener(boolean listener) {
            this.listener = listener;
        }

        public String getDelayLevels() {
            return delayLevels;
        }

        public void setDelayLevels(String delayLevels) {
            this.delayLevels = delayLevels;
        }
    }
}
