package dev.idem.rocketmq;

import java.util.Map;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.hook.CheckForbiddenContext;
import org.apache.rocketmq.client.hook.CheckForbiddenHook;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.remoting.protocol.ResponseCode;
import org.jspecify.annotations.Nullable;

/**
 * Refuses to send a message whose property names hold U+0001 or U+0002, or whose values hold U+0002: RocketMQ joins
 * properties with these characters and does not escape them, so the consumer reads such a property cut short (two
 * keys {@code a\u0002x} and {@code a\u0002y} both arrive as {@code a}, and the second would be answered {@code
 * DUPLICATE} without its effect). A value is split from its name at the first U+0001 only, so U+0001 inside a value
 * arrives whole and is let through (a dead-letter copy of such a message must still be sendable).
 */
final class PropertySeparatorCheck implements CheckForbiddenHook {

    /** The problem with {@code text} as a property value, or null. */
    static @Nullable String problem(String what, String text) {
        return problem(what, text, false);
    }

    private static @Nullable String problem(String what, String text, boolean name) {
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '\u0002' || (name && c == '\u0001')) {
                return what + " holds U+000" + (int) c + " at index " + i + ", a separator RocketMQ does not escape:"
                        + " the consumer would read it cut short, so two different keys could arrive as one;"
                        + " remove the control character (or encode the key, e.g. hex or Base64)";
            }
        }
        return null;
    }

    static void check(Message message) throws MQClientException {
        for (Map.Entry<String, String> property : message.getProperties().entrySet()) {
            String problem = problem("property name '" + property.getKey() + "'", property.getKey(), true);
            if (problem == null && property.getValue() != null) {
                problem = problem("property '" + property.getKey() + "'", property.getValue());
            }
            if (problem != null) {
                // The code the client's own message check (Validators) answers for an illegal message: a sender tells
                // a message that will never pass from a failure that may.
                throw new MQClientException(
                        ResponseCode.MESSAGE_ILLEGAL, "message to " + message.getTopic() + " refused: " + problem);
            }
        }
    }

    @Override
    public String hookName() {
        return "idem-property-separator-check";
    }

    @Override
    public void checkForbidden(CheckForbiddenContext context) throws MQClientException {
        check(context.getMessage());
    }
}
