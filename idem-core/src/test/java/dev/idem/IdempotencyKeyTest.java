package dev.idem;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class IdempotencyKeyTest {

    @Test
    void shortKey_isStoredAsItIs_underItsNamespace() {
        IdempotencyKey key = IdempotencyKey.of("payments", "10086:PAY");

        assertThat(key.storedKey()).isEqualTo("10086:PAY");
        assertThat(key.storageId()).isEqualTo("payments:10086:PAY");
    }

    @Test
    void keyOver128Utf8Bytes_isStoredAsItsSha256() {
        IdempotencyKey key = IdempotencyKey.of("payments", "é".repeat(65));

        assertThat(key.storedKey())
                .startsWith("sha256:")
                .hasSize(7 + 64)
                .isEqualTo("sha256:" + Fingerprint.of("é".repeat(65)));
    }

    @Test
    void keyOfExactly128Utf8Bytes_isStoredAsItIs() {
        assertThat(IdempotencyKey.of("ns", "é".repeat(64)).storedKey()).isEqualTo("é".repeat(64));
    }

    @Test
    void rawKeyThatLooksHashed_isHashedToo_soItCannotCollideWithAHashedKey() {
        String longKey = "x".repeat(200);
        String forged = IdempotencyKey.of("ns", longKey).storedKey();

        assertThat(IdempotencyKey.of("ns", forged).storedKey()).isNotEqualTo(forged);
    }

    @Test
    void storageId_neverExceedsItsDocumentedMaximum() {
        IdempotencyKey key = IdempotencyKey.of("n".repeat(64), "k".repeat(IdempotencyKey.MAX_KEY_LENGTH));

        assertThat(key.storageId()).hasSizeLessThanOrEqualTo(IdempotencyKey.MAX_STORAGE_ID_LENGTH);
    }

    @ParameterizedTest
    @ValueSource(strings = {"", " ", "\t "})
    void blankKey_isRejected_sayingTheProducerMustSetOne(String blank) {
        assertThatThrownBy(() -> IdempotencyKey.of("payments", blank))
                .isInstanceOf(InvalidKeyException.class)
                .isInstanceOf(DeadLetterException.class)
                .hasMessageContaining("missing or blank");
    }

    @Test
    void keyWithControlCharacter_isRejected_namingTheIndex() {
        assertThatThrownBy(() -> IdempotencyKey.of("payments", "ab\u0000c"))
                .isInstanceOf(InvalidKeyException.class)
                .hasMessageContaining("control character at index 2");
    }

    @ParameterizedTest
    @ValueSource(strings = {"order-\uD800", "order-\uDC00", "order-\uDC00\uD83D", "\uD83D\uD83D\uDCB8"})
    void keyWithUnpairedSurrogate_isRejected_becauseItHasNoUtf8Form(String key) {
        assertThatThrownBy(() -> IdempotencyKey.of("payments", key))
                .isInstanceOf(InvalidKeyException.class)
                .hasMessageContaining("unpaired UTF-16 surrogate");
    }

    @Test
    void keyWithSurrogatePair_isValid() {
        assertThat(IdempotencyKey.of("payments", "emoji-\uD83D\uDCB8").storedKey())
                .isEqualTo("emoji-\uD83D\uDCB8");
    }

    @Test
    void tooLongKey_isRejected_namingTheLimit() {
        assertThatThrownBy(() -> IdempotencyKey.of("payments", "k".repeat(IdempotencyKey.MAX_KEY_LENGTH + 1)))
                .isInstanceOf(InvalidKeyException.class)
                .hasMessageContaining("limit is 4096");
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "",
                "has space",
                "with:colon",
                "-leading-dash",
                ".leading-dot",
                "_leading-underscore",
                "ü",
                "a/b",
                "tab\there",
                "a\u0660",
                "x1234567890123456789012345678901234567890123456789012345678901234"
            })
    void badNamespace_isAConfigurationError_withTheFix(String namespace) {
        assertThatThrownBy(() -> IdempotencyKey.of(namespace, "k"))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("[A-Za-z0-9._-]");
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "a",
                "7",
                "payments-consumer",
                "Orders.v2_EU",
                "x123456789012345678901234567890123456789012345678901234567890123"
            })
    void goodNamespace_isAccepted(String namespace) {
        assertThat(IdempotencyKey.of(namespace, "k").namespace()).isEqualTo(namespace);
    }

    @Test
    void logId_showsNamespaceAndHashPrefix_neverTheKey() {
        IdempotencyKey key = IdempotencyKey.of("payments", "customer-4711-card-4242");

        assertThat(key.logId()).matches("payments/[0-9a-f]{12}").doesNotContain("4711");
        assertThat(key.toString()).isEqualTo(key.logId());
    }
}
