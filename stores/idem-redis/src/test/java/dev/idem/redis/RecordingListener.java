package dev.idem.redis;

import dev.idem.IdempotencyListener;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** Keeps every warning it is given. */
final class RecordingListener implements IdempotencyListener {
    final List<Warning> warnings = new CopyOnWriteArrayList<>();

    @Override
    public void onWarning(Warning warning) {
        warnings.add(warning);
    }
}
