package dev.idem.spring.kafka;

import org.jspecify.annotations.Nullable;

/** Looks through an exception's causes (spring-kafka wraps the listener's exception once or twice). */
final class Causes {
    private Causes() {}

    static <T extends Throwable> @Nullable T find(@Nullable Throwable thrown, Class<T> type) {
        for (Throwable t = thrown; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (type.isInstance(t)) {
                return type.cast(t);
            }
        }
        return null;
    }
}
