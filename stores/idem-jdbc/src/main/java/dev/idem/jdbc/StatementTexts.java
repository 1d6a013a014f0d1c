package dev.idem.jdbc;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * Statement texts built once per shape (a column list, a row count) and kept: a driver's statement cache hashes and
 * compares the text of every statement it is handed, which for a text built anew per call costs more than building
 * it, and the MariaDB driver parses every text it prepares. At most {@code max} shapes are kept; the texts of shapes
 * beyond them are built per call. A shape whose building throws is not kept.
 */
final class StatementTexts<K, T> {
    private final int max;
    private final Function<K, T> build;
    private final Map<K, T> texts = new ConcurrentHashMap<>();

    StatementTexts(int max, Function<K, T> build) {
        this.max = max;
        this.build = build;
    }

    T of(K shape) {
        T text = texts.get(shape);
        if (text != null) {
            return text;
        }
        return texts.size() < max ? texts.computeIfAbsent(shape, build) : build.apply(shape);
    }
}
