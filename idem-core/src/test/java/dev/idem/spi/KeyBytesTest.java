package dev.idem.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class KeyBytesTest {

    @Test
    void validUtf8Text_isTheKeyAsIs() {
        assertThat(KeyBytes.exactKey("10086:PAY".getBytes(StandardCharsets.UTF_8)))
                .isEqualTo("10086:PAY");
        assertThat(KeyBytes.exactKey("订单-é".getBytes(StandardCharsets.UTF_8))).isEqualTo("订单-é");
    }

    @Test
    void bytesDifferingOnlyInInvalidUtf8_giveDifferentKeys() {
        String fe = KeyBytes.exactKey(new byte[] {'o', 'r', 'd', '-', (byte) 0xFE});
        String ff = KeyBytes.exactKey(new byte[] {'o', 'r', 'd', '-', (byte) 0xFF});

        assertThat(fe).isEqualTo("hex:6f72642dfe");
        assertThat(ff).isEqualTo("hex:6f72642dff");
    }

    @Test
    void controlBytes_areWrittenInHex() {
        assertThat(KeyBytes.exactKey(new byte[] {'o', 'r', 'd', '-', 1})).isEqualTo("hex:6f72642d01");
    }

    @Test
    void textThatLooksLikeTheHexForm_isWrittenInHexItself_soTheFormsNeverMeet() {
        String hexOfBinary = KeyBytes.exactKey(new byte[] {(byte) 0xFE});
        String text = KeyBytes.exactKey(hexOfBinary.getBytes(StandardCharsets.UTF_8));

        assertThat(hexOfBinary).isEqualTo("hex:fe");
        assertThat(text).isEqualTo("hex:6865783a6665").isNotEqualTo(hexOfBinary);
    }

    @Test
    void text_isTheKeyItsUtf8BytesGive() {
        assertThat(KeyBytes.exactText("订单-é")).isEqualTo("订单-é");
        assertThat(KeyBytes.exactText("ord-\u0001")).isEqualTo(KeyBytes.exactKey(new byte[] {'o', 'r', 'd', '-', 1}));
    }

    @Test
    void textWhereADecoderReplacedInvalidUtf8_isRefused_forTwoSuchKeysWouldBeOne() {
        String fe = new String(new byte[] {'o', 'r', 'd', '-', (byte) 0xFE}, StandardCharsets.UTF_8);
        String ff = new String(new byte[] {'o', 'r', 'd', '-', (byte) 0xFF}, StandardCharsets.UTF_8);

        assertThat(fe).isEqualTo(ff);
        assertThatThrownBy(() -> KeyBytes.exactText(fe))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("U+FFFD")
                .hasMessageContaining("UTF-8");
    }
}
