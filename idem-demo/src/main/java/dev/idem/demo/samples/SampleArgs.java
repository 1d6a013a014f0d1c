package dev.idem.demo.samples;

import java.util.HashMap;
import java.util.Map;

/**
 * The command line every sample consumer takes: {@code --broker kafka --server {bootstrap} --topic {topic} --group
 * {group} --jdbc {jdbcUrl}}, or {@code --broker nats --server {natsUrl} --stream {stream} --group {group}
 * --dead-letter-subject {deadLetterSubject} --jdbc {jdbcUrl}}, or {@code --broker rabbitmq --server {amqpUrl} --queue
 * {queue} --jdbc {jdbcUrl}}, or {@code --broker rocketmq --server {namesrv} --topic {topic} --group {group} --jdbc
 * {jdbcUrl}} ({@link InboxConsumer} only).
 */
record SampleArgs(Map<String, String> values) {

    static SampleArgs parse(String[] args) {
        Map<String, String> values = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (!args[i].startsWith("--")) {
                throw new IllegalArgumentException("expected --name value pairs, got " + args[i]);
            }
            values.put(args[i].substring(2), args[i + 1]);
        }
        return new SampleArgs(values);
    }

    String get(String name) {
        String v = values.get(name);
        if (v == null) {
            throw new IllegalArgumentException("--" + name + " is missing: see " + SampleArgs.class.getName());
        }
        return v;
    }

    String broker() {
        return get("broker");
    }
}
