package dev.idem.demo.samples;

/** A payment as the lab sends it: the id from the {@code payment-id} header, the value {@code <account>:<cents>}. */
record Payment(String id, String account, long amount) {

    static Payment of(String id, String value) {
        int colon = value.lastIndexOf(':');
        return new Payment(id, value.substring(0, colon), Long.parseLong(value.substring(colon + 1)));
    }
}
