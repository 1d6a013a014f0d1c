package dev.idem.spring;

import dev.idem.ConfigurationException;
import dev.idem.Fingerprint;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.expression.EvaluationException;
import org.springframework.expression.Expression;
import org.springframework.expression.ExpressionParser;
import org.springframework.expression.ParseException;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.util.StringUtils;

/** One {@link Idempotent} method, its annotation parsed once: namespace, key and fingerprint expressions, codec. */
final class IdempotentMethod {
    private static final ExpressionParser PARSER = new SpelExpressionParser();
    private static final ParameterNameDiscoverer NAMES = new DefaultParameterNameDiscoverer();

    private final Method method;
    private final String namespace;
    private final Expression key;
    private final @Nullable Expression fingerprint;
    private final ResultCodec codec;

    IdempotentMethod(Method method, Idempotent annotation, @Nullable String defaultNamespace, ResultCodec codec) {
        this.method = method;
        String ns = StringUtils.hasText(annotation.namespace()) ? annotation.namespace() : defaultNamespace;
        if (!StringUtils.hasText(ns)) {
            throw new ConfigurationException("@Idempotent on " + where() + " has no namespace: set"
                    + " @Idempotent(namespace = \"...\") or the property idem.namespace (e.g. your consumer group)");
        }
        this.namespace = ns;
        this.key = parse("key", annotation.key());
        this.fingerprint =
                StringUtils.hasText(annotation.fingerprint()) ? parse("fingerprint", annotation.fingerprint()) : null;
        if (!codec.supports(method.getReturnType())) {
            throw new ConfigurationException("@Idempotent on " + where() + " returns "
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
     * The key for these arguments; a null value becomes the empty key, which the guard rejects.
     *
     * @throws EvaluationException when the expression fails on these arguments (e.g. a missing header)
     */
    String key(Object target, @Nullable Object[] arguments) {
        Object value = evaluate(key, target, arguments);
        if (value == null) {
            return "";
        }
        return value instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : value.toString();
    }

    /**
     * The payload fingerprint for these arguments, or null when the method has none.
     *
     * @throws EvaluationException when the expression fails on these arguments
     */
    @Nullable
    String fingerprint(Object target, @Nullable Object[] arguments) {
        if (fingerprint == null) {
            return null;
        }
        Object value = evaluate(fingerprint, target, arguments);
        if (value == null) {
            return null;
        }
        return value instanceof byte[] b ? Fingerprint.of(b) : Fingerprint.of(value.toString());
    }

    private @Nullable Object evaluate(Expression expression, Object target, @Nullable Object[] arguments) {
        return expression.getValue(new MethodBasedEvaluationContext(target, method, arguments, NAMES));
    }

    private Expression parse(String what, String text) {
        try {
            return PARSER.parseExpression(text);
        } catch (ParseException e) {
            throw new ConfigurationException(
                    "@Idempotent on " + where() + ": " + what + " '" + text + "' is not valid SpEL: " + e.getMessage(),
                    e);
        }
    }

    private String where() {
        return method.getDeclaringClass().getName() + "." + method.getName();
    }
}
