/**
 * The transactional outbox: messages a guarded handler sends, inserted on its transaction's connection, relayed to a
 * broker with stable message ids. The publishers for Kafka, RabbitMQ, NATS JetStream and RocketMQ need that broker's Idem module
 * on the module path (each is an optional dependency).
 */
module dev.idem.outbox {
    requires transitive dev.idem.core;
    requires transitive dev.idem.ids;
    requires transitive dev.idem.jdbc;
    requires transitive java.sql;
    requires static dev.idem.kafka;
    requires static dev.idem.rabbitmq;
    requires static dev.idem.nats;
    requires static dev.idem.rocketmq;
    requires static org.postgresql.jdbc;
    requires static org.jspecify;

    exports dev.idem.outbox;
    exports dev.idem.outbox.spi;
    exports dev.idem.outbox.kafka;
    exports dev.idem.outbox.rabbitmq;
    exports dev.idem.outbox.nats;
    exports dev.idem.outbox.rocketmq;
}
