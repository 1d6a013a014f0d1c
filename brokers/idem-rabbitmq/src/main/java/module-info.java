/** The guarded RabbitMQ consumer, its delivery processor, the topology and the confirming publisher. */
module dev.idem.rabbitmq {
    requires transitive dev.idem.core;
    requires transitive com.rabbitmq.client;
    requires static org.jspecify;

    exports dev.idem.rabbitmq;
}
