/** Micrometer meters from Idem's events. */
module dev.idem.micrometer {
    requires transitive dev.idem.core;
    requires transitive micrometer.core;
    requires static org.jspecify;

    exports dev.idem.micrometer;
}
