package dev.idem;

import org.jspecify.annotations.Nullable;

/** A setting is wrong. The message names the setting and how to fix it. */
public class ConfigurationException extends IdempotencyException {
    private static final long serialVersionUID = 1L;

    public ConfigurationException(String message) {
        super(message, null);
    }

    public ConfigurationException(String message, @Nullable Throwable cause) {
        super(message, cause);
    }
}
