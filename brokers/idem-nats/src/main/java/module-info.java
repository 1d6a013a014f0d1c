/** The guarded NATS JetStream pull consumer and the publisher helper. */
module dev.idem.nats {
    requires transitive dev.idem.core;
    requires transitive io.nats.jnats;
    requires static org.jspecify;

    exports dev.idem.nats;
}
