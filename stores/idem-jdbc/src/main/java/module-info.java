/** The JDBC stores: transactional inbox, lease store, business guards and node-id leases (PostgreSQL, MySQL/MariaDB, H2). */
module dev.idem.jdbc {
    requires transitive dev.idem.core;
    requires static dev.idem.ids;
    requires transitive java.sql;
    requires static org.jspecify;

    exports dev.idem.jdbc;
}
