/**
 * Idem for Spring Boot: {@code @Idempotent}, the auto-configuration, spring-kafka error handling, the Flyway and
 * Liquibase migrations, health and the re-arm endpoint. Everything beyond the core, the JDBC store and Spring's own
 * modules is optional and configured only when present.
 */
module dev.idem.spring {
    requires transitive dev.idem.core;
    requires transitive dev.idem.jdbc;
    requires transitive spring.aop;
    requires transitive spring.beans;
    requires transitive spring.boot;
    requires transitive spring.boot.autoconfigure;
    requires transitive spring.context;
    requires transitive spring.core;
    requires spring.expression;
    requires spring.jdbc;
    requires spring.tx;
    requires static com.rabbitmq.client;
    requires static dev.idem.micrometer;
    requires static dev.idem.outbox;
    requires static dev.idem.rabbitmq;
    requires static dev.idem.redis;
    requires static dev.idem.rocketmq;
    requires static flyway.core;
    requires static kafka.clients;
    requires static lettuce.core;
    requires static liquibase.core;
    requires static micrometer.commons;
    requires static micrometer.core;
    requires static micrometer.observation;
    requires static org.jspecify;
    requires static spring.boot.actuator;
    requires static spring.boot.flyway;
    requires static spring.boot.actuator.autoconfigure;
    requires static spring.amqp;
    requires static spring.boot.health;
    requires static spring.data.redis;
    requires static spring.kafka;
    requires static spring.messaging;
    requires static spring.rabbit;
    requires static rocketmq.spring.boot;

    exports dev.idem.spring;
    exports dev.idem.spring.actuate;
    exports dev.idem.spring.kafka;
    exports dev.idem.spring.outbox;
    exports dev.idem.spring.rabbit;
    exports dev.idem.spring.rocketmq;
    exports dev.idem.spring.schema;

    opens dev.idem.spring to
            spring.core,
            spring.beans,
            spring.context;
    opens dev.idem.spring.actuate to
            spring.core,
            spring.beans,
            spring.context;
    opens dev.idem.spring.kafka to
            spring.core,
            spring.beans,
            spring.context;
    opens dev.idem.spring.outbox to
            spring.core,
            spring.beans,
            spring.context;
    opens dev.idem.spring.rabbit to
            spring.core,
            spring.beans,
            spring.context;
    opens dev.idem.spring.rocketmq to
            spring.core,
            spring.beans,
            spring.context;
    opens dev.idem.spring.schema to
            spring.core,
            spring.beans,
            spring.context;
}
