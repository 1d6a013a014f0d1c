package dev.idem;

import java.util.ArrayDeque;
import java.util.Collections;
import java.util.Deque;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/**
 * The lifecycle of a business entity, used as its own idempotency guard: an event applies with one conditional
 * update ({@code UPDATE … SET status = :to WHERE id = :id AND status IN (:from…)}); when that changes nothing, the
 * current state tells what the delivery was ({@link #classify}).
 *
 * <pre>{@code
 * StateMachine orders = StateMachine.builder()
 *         .states("PENDING", "PAID", "SHIPPED", "CANCELLED")
 *         .initial("PENDING")
 *         .transition("PAY", "PENDING", "PAID")
 *         .transition("SHIP", "PAID", "SHIPPED")
 *         .transition("CANCEL", "PENDING", "CANCELLED")
 *         .build();
 * }</pre>
 *
 * <p>Checked when built: every state declared, every state reachable from the initial one, each event has one
 * target, no event leads from a state to itself, and the graph has no cycle (a cycle would make a replayed event
 * indistinguishable from a new one; guard such entities with a version instead). Immutable and thread-safe.
 */
public final class StateMachine {
    private final String initial;
    private final Set<String> states;
    private final Map<String, Set<String>> sources;
    private final Map<String, String> targets;
    private final Map<String, Set<String>> reachable;

    private StateMachine(Builder b) {
        this.initial = Objects.requireNonNull(b.initial, "initial");
        this.states = Collections.unmodifiableSet(new LinkedHashSet<>(b.states));
        Map<String, Set<String>> src = new LinkedHashMap<>();
        b.sources.forEach((event, from) -> src.put(event, Collections.unmodifiableSet(new LinkedHashSet<>(from))));
        this.sources = Collections.unmodifiableMap(src);
        this.targets = Collections.unmodifiableMap(new LinkedHashMap<>(b.targets));
        this.reachable = reachability(states, sources, targets);
    }

    public static Builder builder() {
        return new Builder();
    }

    public String initial() {
        return initial;
    }

    public Set<String> states() {
        return states;
    }

    public Set<String> events() {
        return targets.keySet();
    }

    /** The states from which {@code event} applies. */
    public Set<String> sourcesOf(String event) {
        return Objects.requireNonNull(sources.get(known(event)));
    }

    /** The state {@code event} leads to. */
    public String targetOf(String event) {
        return Objects.requireNonNull(targets.get(known(event)));
    }

    /** True when {@code to} can be reached from {@code from} by one or more events. */
    public boolean leadsTo(String from, String to) {
        return reachable.getOrDefault(from, Set.of()).contains(to);
    }

    /**
     * What a delivery of {@code event} was, given that its conditional update changed no row and the entity is now
     * in {@code current} ({@code null}: the entity does not exist):
     *
     * <ul>
     *   <li>already in the target state, or in a state reachable only after it → {@link Outcome.Type#DUPLICATE};
     *   <li>missing, or in an earlier state from which a source is still reachable → {@link
     *       Outcome.Type#OUT_OF_ORDER} (retry later: "cancel before create", "ship before pay");
     *   <li>anything else (PAY on a CANCELLED order) → {@link Outcome.Type#REJECTED}, naming both states.
     * </ul>
     *
     * <p>An event with several source states can overtake another: a REFUND (from PAID or SHIPPED) that arrives
     * before the SHIP of a PAID order applies, and the late SHIP is then a duplicate. The final state is still the
     * one the last event implies.
     */
    public Outcome classify(String event, @Nullable String current) {
        String target = targetOf(event);
        Set<String> from = sourcesOf(event);
        if (current == null) {
            return Outcome.outOfOrder(event + " arrived before the entity exists: retry until it is created");
        }
        if (!states.contains(current)) {
            return Outcome.rejected("the entity is in state '" + current + "', which the state machine does not know;"
                    + " add it to .states(...) or fix the data");
        }
        if (current.equals(target) || leadsTo(target, current)) {
            return Outcome.duplicate(event + " already applied: the entity is in " + current);
        }
        if (from.contains(current)) {
            return Outcome.outOfOrder(event + " found the entity in " + current
                    + " but changed nothing (a concurrent update moved it): retry");
        }
        for (String source : from) {
            if (leadsTo(current, source)) {
                return Outcome.outOfOrder(event + " needs " + describe(from) + " but the entity is still in " + current
                        + ": an earlier event has not arrived yet, retry later");
            }
        }
        return Outcome.rejected(event + " cannot apply to an entity in " + current + " (" + event + " moves "
                + describe(from) + " → " + target + ", and " + current + " can never reach it)");
    }

    private static String describe(Set<String> from) {
        return from.size() == 1 ? from.iterator().next() : from.stream().collect(Collectors.joining("|", "{", "}"));
    }

    private String known(String event) {
        if (!targets.containsKey(event)) {
            throw new ConfigurationException("unknown event '" + event + "': the state machine knows " + events());
        }
        return event;
    }

    private static Map<String, Set<String>> reachability(
            Set<String> states, Map<String, Set<String>> sources, Map<String, String> targets) {
        Map<String, Set<String>> next = new LinkedHashMap<>();
        sources.forEach((event, from) ->
                from.forEach(s -> next.computeIfAbsent(s, k -> new HashSet<>()).add(targets.get(event))));
        Map<String, Set<String>> reach = new LinkedHashMap<>();
        for (String s : states) {
            Set<String> seen = new HashSet<>();
            Deque<String> todo = new ArrayDeque<>(next.getOrDefault(s, Set.of()));
            while (!todo.isEmpty()) {
                String t = todo.pop();
                if (seen.add(t)) {
                    todo.addAll(next.getOrDefault(t, Set.of()));
                }
            }
            reach.put(s, Collections.unmodifiableSet(seen));
        }
        return Collections.unmodifiableMap(reach);
    }

    /** Builds a {@link StateMachine}; {@link #build()} checks the whole graph. */
    public static final class Builder {
        private final Set<String> states = new LinkedHashSet<>();
        private @Nullable String initial;
        private final Map<String, Set<String>> sources = new LinkedHashMap<>();
        private final Map<String, String> targets = new LinkedHashMap<>();

        private Builder() {}

        /** Declares the states, e.g. the values of the status column. */
        public Builder states(String... names) {
            for (String name : names) {
                if (name == null || name.isBlank()) {
                    throw new ConfigurationException("a state name must not be blank");
                }
                states.add(name);
            }
            return this;
        }

        /** The state a newly created entity is in. */
        public Builder initial(String state) {
            this.initial = Objects.requireNonNull(state, "state");
            return this;
        }

        /** {@code event} moves an entity from {@code from} to {@code to}. Call again to add source states. */
        public Builder transition(String event, String from, String to) {
            return transition(event, List.of(from), to);
        }

        /** {@code event} moves an entity from any of {@code from} to {@code to}. */
        public Builder transition(String event, List<String> from, String to) {
            if (event == null || event.isBlank()) {
                throw new ConfigurationException("an event name must not be blank");
            }
            String previous = targets.putIfAbsent(event, to);
            if (previous != null && !previous.equals(to)) {
                throw new ConfigurationException("event " + event + " is ambiguous: it leads to both " + previous
                        + " and " + to + "; give each target its own event");
            }
            for (String f : from) {
                if (f.equals(to)) {
                    throw new ConfigurationException("event " + event + " leads from " + f + " to itself: a replay"
                            + " could not be told from a new event; drop that transition");
                }
                sources.computeIfAbsent(event, e -> new LinkedHashSet<>()).add(f);
            }
            return this;
        }

        public StateMachine build() {
            if (states.isEmpty()) {
                throw new ConfigurationException("declare the states first: .states(\"PENDING\", \"PAID\", ...)");
            }
            if (initial == null) {
                throw new ConfigurationException("set the state of a new entity: .initial(\"PENDING\")");
            }
            if (targets.isEmpty()) {
                throw new ConfigurationException(
                        "declare at least one transition: .transition(\"PAY\", \"PENDING\"," + " \"PAID\")");
            }
            Set<String> used = new LinkedHashSet<>(targets.values());
            sources.values().forEach(used::addAll);
            used.add(initial);
            used.removeAll(states);
            if (!used.isEmpty()) {
                throw new ConfigurationException("unknown states " + used + ": declare them in .states(...)");
            }
            StateMachine machine = new StateMachine(this);
            Set<String> unreachable = new LinkedHashSet<>(states);
            unreachable.remove(initial);
            unreachable.removeAll(machine.reachable.get(initial));
            if (!unreachable.isEmpty()) {
                throw new ConfigurationException("states " + unreachable + " cannot be reached from the initial state "
                        + initial + ": add a transition into them or remove them");
            }
            for (String s : states) {
                if (machine.leadsTo(s, s)) {
                    throw new ConfigurationException("the transitions form a cycle through " + s + ": a replayed event"
                            + " could not be told from a new one; guard this entity with a version instead");
                }
            }
            return machine;
        }
    }
}
