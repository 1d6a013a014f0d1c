package dev.idem.demo;

/**
 * One copy of a message handed to a strategy. {@link #insideEffect()} is called by the strategy when it starts the
 * business effect (inside the guard, inside the transaction): there a slowed first copy waits until the redelivered
 * copy has started, so the two really overlap.
 */
interface Delivery {
    OrderEvent event();

    void insideEffect() throws InterruptedException;

    /** A delivery that nothing slows down. */
    static Delivery plain(OrderEvent event) {
        return new Delivery() {
            @Override
            public OrderEvent event() {
                return event;
            }

            @Override
            public void insideEffect() {}
        };
    }
}
