/** The Kafka runner and producer helpers. */
module dev.idem.kafka {
    requires transitive dev.idem.core;
    requires transitive kafka.clients;
    requires static org.jspecify;

    exports dev.idem.kafka;
}
