/** Message ids: readable and 64-bit forms, the generator, and node-id leases so two live nodes never share one. */
module dev.idem.ids {
    requires transitive dev.idem.core;
    requires static org.jspecify;

    exports dev.idem.id;
    exports dev.idem.id.spi;
}
