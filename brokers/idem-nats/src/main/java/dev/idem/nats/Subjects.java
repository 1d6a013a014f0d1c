package dev.idem.nats;

/** NATS subject matching: {@code *} matches one token, a final {@code >} one or more. */
final class Subjects {
    private Subjects() {}

    static boolean matches(String pattern, String subject) {
        String[] p = pattern.split("\\.", -1);
        String[] s = subject.split("\\.", -1);
        for (int i = 0; i < p.length; i++) {
            if (p[i].equals(">")) {
                return s.length > i;
            }
            if (i >= s.length || !(p[i].equals("*") || p[i].equals(s[i]))) {
                return false;
            }
        }
        return p.length == s.length;
    }
}
