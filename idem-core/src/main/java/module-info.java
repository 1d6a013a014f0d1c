/** Idem's core: keys, outcomes, the guard engine, the in-memory store, the store SPI. JDK only. */
module dev.idem.core {
    requires java.sql;
    requires static org.jspecify;

    exports dev.idem;
    exports dev.idem.spi;
    exports dev.idem.internal to
            dev.idem.jdbc,
            dev.idem.redis,
            dev.idem.kafka,
            dev.idem.rocketmq,
            dev.idem.rabbitmq,
            dev.idem.nats;
}
