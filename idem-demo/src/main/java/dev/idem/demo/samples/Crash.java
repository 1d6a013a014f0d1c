package dev.idem.demo.samples;

/**
 * How a sample dies of an unexpected exception: with its process, at once. A main thread that ends with an exception
 * leaves the JVM running on the client libraries' threads, holding its unacknowledged message forever.
 */
final class Crash {
    private Crash() {}

    /** A sample's body. */
    @FunctionalInterface
    interface Body {
        void run() throws Exception;
    }

    static void onException(Body body) {
        try {
            body.run();
        } catch (Throwable t) {
            t.printStackTrace();
            System.exit(1);
        }
    }
}
