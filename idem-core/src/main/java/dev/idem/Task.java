package dev.idem;

/** A guarded effect with nothing to say beyond success (return) or failure (throw). */
@FunctionalInterface
public interface Task {
    void run() throws Exception;
}
