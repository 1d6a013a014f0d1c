package dev.idem.kafka;

/** What the runner keeps in order within a partition. */
public enum Ordering {
    /**
     * Every record of a partition in offset order, one at a time (the default): a record that is retried holds back
     * the records after it.
     */
    PARTITION,
    /**
     * Records of the same idempotency key in offset order; records of different keys of one partition run in
     * parallel on the workers, and a retried record holds back only its own key. Offsets are still committed only up
     * to the first record that is not final.
     */
    KEY
}
