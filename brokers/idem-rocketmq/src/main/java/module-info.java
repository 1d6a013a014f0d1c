/** Guarded RocketMQ push-consumer listeners and producer helpers. */
module dev.idem.rocketmq {
    requires transitive dev.idem.core;
    requires transitive rocketmq.client;
    requires transitive rocketmq.common;
    requires transitive rocketmq.remoting;
    requires static org.jspecify;

    exports dev.idem.rocketmq;
}
