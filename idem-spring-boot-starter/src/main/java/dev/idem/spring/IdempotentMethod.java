package dev.idem.spring;

import dev.idem.ConfigurationException;
import dev.idem.Fingerprint;
import dev.idem.spi.KeyBytes;
import java.lang.reflect.Method;
import org.jspecify.annotations.Nullable;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.expression.EvaluationContext;
import org.springframework.expression.EvaluationException;
import org.springframework.expression.Expression;
import org.springframework.expression.ExpressionParser;
import org.springframework.expression.ParseException;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.expression.spel.support.StandardEvaluationContext;
import org.springframework.util.StringUtils;

/**
 * One {@link Idempotent} or {@link IdempotentBatch} method, its annotation parsed once: namespace, key and fingerprint
 * expressions, codec.
 */
final class IdempotentMethod {
    private static final ExpressionParser PARSER = new SpelExpressionParser();
    private static final ParameterNameDiscoverer NAMES = new DefaultParameterNameDiscoverer();

    private final Method method;
    private final String annotationName;
    private final String namespace;
    private final Expression key;
    private final @Nullable Expression fingerprint;
    private final ResultCodec codec;

    IdempotentMethod(Method method, Idempotent annotation, @Nullable String defaultNamespace, ResultCodec codec) {
        this(
                method,
                "@Idempotent",
                annotation.namespace(),
                annotation.key(),
                annotation.fingerprint(),
                defaultNamespace,
                codec);
    }

    IdempotentMethod(Method method, IdempotentBatch annotation, @Nullable String defaultNamespace, ResultCodec codec) {
        this(
                method,
                "@IdempotentBatch",
                annotation.namespace(),
                annotation.key(),
                annotation.fingerprint(),
                defaultNamespace,
                codec);
    }

    private IdempotentMethod(
            Method method,
            String annotationName,
            String namespace,
            String key,
            String fingerprint,
            @Nullable String defaultNamespace,
            ResultCodec codec) {
        this.method = method;
        this.annotationName = annotationName;
        String ns = StringUtils.hasText(namespace) ? namespace : defaultNamespace;
        if (!StringUtils.hasText(ns)) {
            throw new ConfigurationException(
                    annotationName + " on " + where() + " has no namespace: set " + annotationName
                            + "(namespace = \"...\") or the property idem.namespace (e.g. your consumer group)");
        }
        this.namespace = ns;
        this.key = parse("key", key);
        this.fingerprint = StringUtils.hasText(fingerprint) ? parse("fingerprint", fingerprint) : null;
        if (!codec.supports(method.getReturnType())) {
            throw new ConfigurationException(annotationName + " on " + where() + " returns "
                    + method.getReturnType().getName()
                    + ", which the result codec cannot store for duplicates: return void, String or byte[], or declare"
                    + " a ResultCodec bean that supports it");
        }
        this.codec = codec;
    }

    String namespace() {
        return namespace;
    }

    ResultCodec codec() {
        return codec;
    }

    Class<?> returnType() {
        return method.getReturnType();
    }

    /**
     * The key for these arguments; a null value becomes the empty key, which the guard rejects. Bytes (a Kafka record
     * key, a header) are read by {@link KeyBytes#exactKey}, any other value as text by {@link KeyBytes#exactText}, so
     * that two keys whose bytes differ stay two keys and a text key is the key its UTF-8 bytes would be.
     *
     * @throws EvaluationException when the expression fails on these arguments (e.g. a missing header); a
     *     RuntimeException of a method the expression calls propagates as it is
     * @throws IllegalArgumentException when the text holds U+FFFD, a decoder's stand-in for bytes that were not UTF-8:
     *     keys that differed there would be taken for one
     */
    String key(EvaluationContext context) {
        Object value = key.getValue(context);
        if (value == null) {
            return "";
        }
        return value instanceof byte[] b ? KeyBytes.exactKey(b) : KeyBytes.exactText(value.toString());
    }

    /**
     * The payload fingerprint for these arguments, or null when the method has none.
     *
     * @throws EvaluationException when the expression fails on these arguments; a RuntimeException of a method the
     *     expression calls propagates as it is
     */
    @Nullable
    String fingerprint(EvaluationContext context) {
        if (fingerprint == null) {
            return null;
        }
        Object value = fingerprint.getValue(context);
        if (value == null) {
            return null;
        }
        return value instanceof byte[] b ? Fingerprint.of(b) : Fingerprint.of(value.toString());
    }

    /**
     * The context the expressions see: the arguments by name ({@code #record}) or position ({@code #p0}), {@code root}
     * as the root object.
     */
    StandardEvaluationContext context(Object root, @Nullable Object[] arguments) {
        return new MethodBasedEvaluationContext(root, method, arguments, NAMES);
    }

    Method method() {
        return method;
    }

    private Expression parse(String what, String text) {
        try {
            return PARSER.parseExpression(text);
        } catch (ParseException e) {
            throw new ConfigurationException(
                    annotationName + " on " + where() + ": " + what + " '" + text + "' is not valid SpEL: "
                            + e.getMessage(),
                    e);
        }
    }

    String where() {
        return method.getDeclaringClass().getName() + "." + method.getName();
    }
}
