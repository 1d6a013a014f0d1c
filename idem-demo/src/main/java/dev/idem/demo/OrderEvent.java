package dev.idem.demo;

import java.nio.charset.StandardCharsets;

/**
 * One message of the order flow. Its idempotency key {@code <order>:<type>} is fixed before the first send and
 * travels in the record; {@code version} is the order's version the event was produced against (for the version
 * guard).
 */
record OrderEvent(long orderId, Type type, long customerId, long amount, long version) {

    /** The events of an order's life. */
    enum Type {
        CREATE,
        PAY,
        SHIP,
        CANCEL
    }

    String key() {
        return orderId + ":" + type;
    }

    byte[] encode() {
        return ("order=" + orderId + ";type=" + type + ";customer=" + customerId + ";amount=" + amount + ";version="
                        + version)
                .getBytes(StandardCharsets.UTF_8);
    }

    /** Decodes a record value; throws {@link IllegalArgumentException} for anything else. */
    static OrderEvent decode(byte[] value) {
        String text = new String(value, StandardCharsets.UTF_8);
        long order = -1;
        Type type = null;
        long customer = -1;
        long amount = -1;
        long version = -1;
        for (String part : text.split(";")) {
            int eq = part.indexOf('=');
            if (eq < 0) {
                throw new IllegalArgumentException("not an order event: a field without '='");
            }
            String v = part.substring(eq + 1);
            switch (part.substring(0, eq)) {
                case "order" -> order = Long.parseLong(v);
                case "type" -> type = Type.valueOf(v);
                case "customer" -> customer = Long.parseLong(v);
                case "amount" -> amount = Long.parseLong(v);
                case "version" -> version = Long.parseLong(v);
                default -> throw new IllegalArgumentException("not an order event: unknown field");
            }
        }
        if (order < 0 || type == null || customer < 0 || amount < 0 || version < 0) {
            throw new IllegalArgumentException("not an order event: a field is missing");
        }
        return new OrderEvent(order, type, customer, amount, version);
    }
}
