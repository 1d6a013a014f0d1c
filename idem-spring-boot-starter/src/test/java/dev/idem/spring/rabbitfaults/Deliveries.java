package dev.idem.spring.rabbitfaults;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessagePostProcessor;

/** Counts the deliveries of each message id as the container receives them, before any listener code runs. */
public class Deliveries implements MessagePostProcessor {
    private final Map<String, Integer> counts = new ConcurrentHashMap<>();

    @Override
    public Message postProcessMessage(Message message) {
        String id = message.getMessageProperties().getMessageId();
        if (id != null) {
            counts.merge(id, 1, Integer::sum);
        }
        return message;
    }

    public int of(String id) {
        return counts.getOrDefault(id, 0);
    }
}
