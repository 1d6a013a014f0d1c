/** What users test with: store contract suites, redeliveries of their own handlers, a mutable clock, a TCP proxy. */
module dev.idem.testkit {
    requires transitive dev.idem.core;
    requires static dev.idem.ids;
    requires static org.jspecify;
    requires transitive org.junit.jupiter.api;
    requires org.assertj.core;
    requires net.jqwik.api;
    requires awaitility;
    requires java.sql;

    exports dev.idem.testkit;
}
