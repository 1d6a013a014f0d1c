package dev.idem;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class FingerprintTest {

    @Test
    void sha256Fingerprint_andNone_areValid() {
        String fp = Fingerprint.of("payload");

        assertThat(Fingerprint.problem(fp)).isEmpty();
        assertThat(Fingerprint.problem(null)).isEmpty();
        assertThat(Fingerprint.validate(fp)).isEqualTo(fp);
        assertThat(Fingerprint.problem("x".repeat(Fingerprint.MAX_LENGTH))).isEmpty();
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "with space", "tab\t", "caf\u00e9", "\uD800"})
    void emptyOrNonPrintableFingerprint_isAProblem_namingTheFix(String fingerprint) {
        assertThat(Fingerprint.problem(fingerprint))
                .hasValueSatisfying(p -> assertThat(p).contains("Fingerprint.of(payload)"));
    }

    @Test
    void fingerprintOverTheBound_isRefused_asADeadLetter() {
        assertThatThrownBy(() -> Fingerprint.validate("f".repeat(Fingerprint.MAX_LENGTH + 1)))
                .isInstanceOf(DeadLetterException.class)
                .hasMessageContaining("129 characters long");
    }
}
