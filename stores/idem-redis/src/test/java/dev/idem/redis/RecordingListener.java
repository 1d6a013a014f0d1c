package dev.idem.redis;

import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyListener;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** Keeps every warning it is given. */
final class RecordingListener implements IdempotencyListener {
    final List<IdempotencyEvent> warnings = new CopyOnWriteArrayList<>();

    @Override
    public void onEvent(IdempotencyEvent event) {
        if (event.isWarning()) {
            warnings.add(event);
        }
    }
}
