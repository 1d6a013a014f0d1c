package dev.idem.spi;

import dev.idem.ConfigurationException;
import dev.idem.DeadLetterException;
import dev.idem.Outcome;
import dev.idem.RetryLaterException;
import dev.idem.StoreUnavailableException;
import java.sql.SQLException;
import java.sql.SQLNonTransientConnectionException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransientConnectionException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * The one classification of exceptions into outcomes, used by {@link DeliveryDecision}. It reads the whole chain of
 * what was thrown: causes, suppressed exceptions, and exceptions a framework links another way (see {@link
 * Builder#links}), so that a rollback failure that replaced the real exception is classified by the real one.
 *
 * <ol>
 *   <li>An {@link Error} anywhere: a crash. {@code IN_PROGRESS}: never acked, never counted, never dead-lettered.
 *   <li>A store or database that cannot be reached anywhere ({@link StoreUnavailableException}, a JDBC connection
 *       error as {@link #isLostConnection} tells it, or a type registered with {@link Builder#unreachable}):
 *       {@code IN_PROGRESS}, an uncounted wait, so an outage never dead-letters live traffic.
 *   <li>An exception that carries its outcome ({@link Builder#carries}): that outcome.
 *   <li>A {@link ConfigurationException} or another {@link RetryLaterException}: {@code IN_PROGRESS}; neither is the
 *       message's fault.
 *   <li>A {@link DeadLetterException} or a type registered with {@link Builder#rejection}: {@code REJECTED}, dead-letter
 *       at once.
 *   <li>Anything else: the handler's failure, {@code FAILED}, counted.
 * </ol>
 *
 * <p>Immutable and thread-safe.
 */
public final class FailureClassifier {
    private static final int MAX_CHAIN = 64;
    /**
     * HikariCP's answer to every call on a connection it marked broken (after a statement's SQLState 08…, 57P01…):
     * a plain SQLException without SQLState or error code. A commit or rollback made after that, e.g. Spring's, fails
     * with it alone, the original error being gone.
     */
    private static final String POOL_CLOSED_CONNECTION = "Connection is closed";

    /**
     * MariaDB/MySQL: connection killed (1927), server shutdown in progress (1053); H2: connection broken (90067),
     * database closed (90098), in exclusive mode (90135), called during the JVM's shutdown (90121).
     */
    private static final Set<Integer> LOST_CONNECTION_CODES = Set.of(1927, 1053, 90067, 90098, 90121, 90135);

    private static final FailureClassifier STANDARD = builder().build();

    private final List<Class<? extends Throwable>> unreachable;
    private final List<Class<? extends Throwable>> rejections;
    private final List<Carrier<?>> carriers;
    private final List<Link<?>> links;

    private FailureClassifier(Builder b) {
        this.unreachable = List.copyOf(b.unreachable);
        this.rejections = List.copyOf(b.rejections);
        this.carriers = List.copyOf(b.carriers);
        this.links = List.copyOf(b.links);
    }

    /** The classifier that knows the JDK's and Idem's own exceptions. */
    public static FailureClassifier standard() {
        return STANDARD;
    }

    /** A builder starting from {@link #standard()}, to teach it a framework's exceptions. */
    public static Builder builder() {
        return new Builder();
    }

    /** The outcome a handling that threw {@code thrown} has: see the class comment for the rules. */
    public Outcome classify(Throwable thrown) {
        List<Throwable> chain = chain(thrown);
        for (Throwable t : chain) {
            if (t instanceof Error) {
                return Outcome.inProgress("crashed with " + describe(t) + "; delivered again, never counted", null);
            }
        }
        Throwable down = firstUnreachable(chain);
        if (down != null) {
            return unreachableOutcome(down);
        }
        for (Throwable t : chain) {
            Outcome carried = carriedOutcome(t);
            if (carried != null) {
                return carried;
            }
        }
        for (Throwable t : chain) {
            if (t instanceof ConfigurationException || t instanceof RetryLaterException) {
                return Outcome.inProgress(describe(t), null);
            }
        }
        for (Throwable t : chain) {
            if (t instanceof DeadLetterException || isAny(t, rejections)) {
                return Outcome.rejected(String.valueOf(t.getMessage()), t);
            }
        }
        return Outcome.failed("handler threw " + describe(thrown), thrown);
    }

    /** True when {@code thrown}'s chain says a store or database cannot be reached (rule 2). */
    public boolean unreachable(Throwable thrown) {
        return firstUnreachable(chain(thrown)) != null;
    }

    /** {@code outcome}, or an {@code IN_PROGRESS} wait when it is a {@code FAILED} caused by an unreachable store. */
    Outcome waitingWhenUnreachable(Outcome outcome) {
        if (outcome.type() != Outcome.Type.FAILED || outcome.cause().isEmpty()) {
            return outcome;
        }
        Throwable down = firstUnreachable(chain(outcome.cause().get()));
        return down == null ? outcome : unreachableOutcome(down);
    }

    private static Outcome unreachableOutcome(Throwable down) {
        return Outcome.inProgress("store or database unreachable: " + describe(down), null);
    }

    private @Nullable Throwable firstUnreachable(List<Throwable> chain) {
        for (Throwable t : chain) {
            if (t instanceof StoreUnavailableException || isAny(t, unreachable) || isLostConnection(t)) {
                return t;
            }
        }
        return null;
    }

    private @Nullable Outcome carriedOutcome(Throwable t) {
        for (Carrier<?> carrier : carriers) {
            Outcome outcome = carrier.outcomeOf(t);
            if (outcome != null) {
                return outcome;
            }
        }
        return null;
    }

    /** {@code thrown}, then its causes, suppressed and linked exceptions, breadth first, each once. */
    private List<Throwable> chain(Throwable thrown) {
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        List<Throwable> chain = new ArrayList<>();
        ArrayDeque<Throwable> next = new ArrayDeque<>();
        next.add(thrown);
        while (!next.isEmpty() && chain.size() < MAX_CHAIN) {
            Throwable t = next.poll();
            if (!seen.add(t)) {
                continue;
            }
            chain.add(t);
            if (t.getCause() != null) {
                next.add(t.getCause());
            }
            for (Link<?> link : links) {
                Throwable linked = link.linkedTo(t);
                if (linked != null) {
                    next.add(linked);
                }
            }
            Collections.addAll(next, t.getSuppressed());
            if (t instanceof SQLException sql && sql.getNextException() != null) {
                next.add(sql.getNextException());
            }
        }
        return chain;
    }

    /**
     * True when {@code t} itself (not its causes) says that the JDBC connection it came from is gone or cannot be
     * had: the driver's connection exception types; SQLState class {@code 08}; PostgreSQL's {@code 57P…} (the server
     * ended the session: administrator, crash, shutdown, database dropped, idle timeout) and {@code 53300} (out of
     * connections); MariaDB/MySQL's killed connection and shutdown; H2's broken connection and closed database; and
     * HikariCP's {@code SQLException("Connection is closed")} without SQLState, its answer to every call on a
     * connection it marked broken. The one rule for every Idem component that must tell an outage from a failure.
     */
    public static boolean isLostConnection(Throwable t) {
        if (t instanceof SQLTransientConnectionException
                || t instanceof SQLNonTransientConnectionException
                || t instanceof SQLRecoverableException) {
            return true;
        }
        if (!(t instanceof SQLException sql)) {
            return false;
        }
        if (LOST_CONNECTION_CODES.contains(sql.getErrorCode())) {
            return true;
        }
        String state = sql.getSQLState();
        if (state == null) {
            return sql.getErrorCode() == 0 && POOL_CLOSED_CONNECTION.equals(sql.getMessage());
        }
        return state.startsWith("08") || state.startsWith("57P") || state.equals("53300");
    }

    private static boolean isAny(Throwable t, List<Class<? extends Throwable>> types) {
        for (Class<? extends Throwable> type : types) {
            if (type.isInstance(t)) {
                return true;
            }
        }
        return false;
    }

    private static String describe(Throwable t) {
        return t.getClass().getName() + ": " + t.getMessage();
    }

    private record Carrier<T extends Throwable>(Class<T> type, Function<? super T, Outcome> outcome) {
        @Nullable
        Outcome outcomeOf(Throwable t) {
            return type.isInstance(t) ? outcome.apply(type.cast(t)) : null;
        }
    }

    private record Link<T extends Throwable>(Class<T> type, Function<? super T, @Nullable Throwable> linked) {
        @Nullable
        Throwable linkedTo(Throwable t) {
            return type.isInstance(t) ? linked.apply(type.cast(t)) : null;
        }
    }

    /** Teaches the classifier a framework's exceptions. Each method adds to what {@link #standard()} knows. */
    public static final class Builder {
        private final List<Class<? extends Throwable>> unreachable = new ArrayList<>();
        private final List<Class<? extends Throwable>> rejections = new ArrayList<>();
        private final List<Carrier<?>> carriers = new ArrayList<>();
        private final List<Link<?>> links = new ArrayList<>();

        private Builder() {}

        /** {@code type} means a store or database cannot be reached, e.g. Spring's {@code CannotCreateTransactionException}. */
        public Builder unreachable(Class<? extends Throwable> type) {
            unreachable.add(Objects.requireNonNull(type, "type"));
            return this;
        }

        /** {@code type} means the message can never be handled as it is: dead-letter it at once. */
        public Builder rejection(Class<? extends Throwable> type) {
            rejections.add(Objects.requireNonNull(type, "type"));
            return this;
        }

        /** {@code type} carries the outcome of the handling that threw it, e.g. an exception made from an outcome. */
        public <T extends Throwable> Builder carries(Class<T> type, Function<? super T, Outcome> outcome) {
            carriers.add(
                    new Carrier<>(Objects.requireNonNull(type, "type"), Objects.requireNonNull(outcome, "outcome")));
            return this;
        }

        /**
         * {@code type} stands for another exception it does not hold as its cause, e.g. Spring's {@code
         * TransactionSystemException::getApplicationException}: that one is classified too.
         */
        public <T extends Throwable> Builder links(Class<T> type, Function<? super T, @Nullable Throwable> linked) {
            links.add(new Link<>(Objects.requireNonNull(type, "type"), Objects.requireNonNull(linked, "linked")));
            return this;
        }

        public FailureClassifier build() {
            return new FailureClassifier(this);
        }
    }
}
