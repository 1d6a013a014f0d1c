package dev.idem.demo;

import dev.idem.demo.OrderEvent.Type;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The orders of a lab run and the order in which their events are published: CREATE, PAY, SHIP for most orders,
 * CREATE, CANCEL for some. A reordered order publishes its last event first (CANCEL before CREATE, SHIP before PAY)
 * on the next partition, so that it really overtakes its predecessor. Deterministic for a seed.
 */
final class OrderFlow {

    /** One order and how it must end. */
    record Order(long id, long customerId, long amount, boolean cancelled, boolean reordered) {
        String finalStatus() {
            return cancelled ? "CANCELLED" : "SHIPPED";
        }
    }

    /** One publication: an event and the partition it goes to. */
    record Send(OrderEvent event, int partition, boolean overtaking) {}

    private final List<Order> orders;
    private final List<Send> sends;
    private final int customers;

    private OrderFlow(List<Order> orders, List<Send> sends, int customers) {
        this.orders = orders;
        this.sends = sends;
        this.customers = customers;
    }

    static OrderFlow generate(int count, int partitions, double cancelRate, double reorderRate, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        int customers = Math.max(10, count / 20);
        List<Order> orders = new ArrayList<>(count);
        List<Send> sends = new ArrayList<>(count * 3);
        for (long id = 1; id <= count; id++) {
            long customer = 1 + random.nextInt(customers);
            long amount = 100 + random.nextInt(99_900);
            boolean cancelled = random.nextDouble() < cancelRate;
            boolean reordered = random.nextDouble() < reorderRate;
            Order order = new Order(id, customer, amount, cancelled, reordered);
            orders.add(order);
            int home = (int) (id % partitions);
            int other = (home + 1) % partitions;
            OrderEvent create = new OrderEvent(id, Type.CREATE, customer, amount, 0);
            if (cancelled) {
                OrderEvent cancel = new OrderEvent(id, Type.CANCEL, customer, amount, 1);
                if (reordered) {
                    sends.add(new Send(cancel, other, true));
                    sends.add(new Send(create, home, false));
                } else {
                    sends.add(new Send(create, home, false));
                    sends.add(new Send(cancel, home, false));
                }
            } else {
                OrderEvent pay = new OrderEvent(id, Type.PAY, customer, amount, 1);
                OrderEvent ship = new OrderEvent(id, Type.SHIP, customer, amount, 2);
                if (reordered) {
                    sends.add(new Send(create, home, false));
                    sends.add(new Send(ship, other, true));
                    sends.add(new Send(pay, home, false));
                } else {
                    sends.add(new Send(create, home, false));
                    sends.add(new Send(pay, home, false));
                    sends.add(new Send(ship, home, false));
                }
            }
        }
        return new OrderFlow(Collections.unmodifiableList(orders), Collections.unmodifiableList(sends), customers);
    }

    List<Order> orders() {
        return orders;
    }

    List<Send> sends() {
        return sends;
    }

    int customers() {
        return customers;
    }

    long paidOrders() {
        return orders.stream().filter(o -> !o.cancelled()).count();
    }

    long reorderedOrders() {
        return orders.stream().filter(Order::reordered).count();
    }
}
