/** The Redis lease store and node-id lease store (Lettuce). */
module dev.idem.redis {
    requires transitive dev.idem.core;
    requires static dev.idem.ids;
    requires lettuce.core;
    requires static org.jspecify;

    exports dev.idem.redis;
}
