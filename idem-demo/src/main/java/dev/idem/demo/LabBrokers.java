package dev.idem.demo;

import java.io.PrintStream;

/** Starts the broker {@code --broker} names. */
final class LabBrokers {
    private LabBrokers() {}

    /**
     * The broker of {@code options}, connected (or started in-process); {@code header} prints the run's first line
     * once the broker's options were checked.
     */
    static LabBroker start(LabOptions options, PrintStream out, Runnable header) throws Exception {
        return switch (options.broker()) {
            case "kafka" -> KafkaLabBroker.start(options, out, header);
            case "rocketmq" -> RocketMqLabBroker.start(options, out, header);
            case "rabbitmq" -> RabbitLabBroker.start(options, header);
            case "nats" -> NatsLabBroker.start(options, header);
            default -> throw new LabOptions.BadOptionException("unknown --broker " + options.broker());
        };
    }
}
