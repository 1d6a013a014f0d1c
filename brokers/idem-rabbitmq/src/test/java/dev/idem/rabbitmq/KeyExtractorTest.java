package dev.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Delivery;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.impl.LongStringHelper;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;

class KeyExtractorTest {

    private static Delivery with(AMQP.BasicProperties props, String body) {
        return new Delivery(new Envelope(1, false, "", "q"), props, body.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void header_readsLongStringsByteArraysAndNumbers_asText() throws Exception {
        KeyExtractor key = KeyExtractor.header("idem-key");
        AMQP.BasicProperties longString = new AMQP.BasicProperties.Builder()
                .headers(Map.of("idem-key", LongStringHelper.asLongString("10086:PAY")))
                .build();
        AMQP.BasicProperties bytes = new AMQP.BasicProperties.Builder()
                .headers(Map.of("idem-key", "10086:PAY".getBytes(StandardCharsets.UTF_8)))
                .build();
        AMQP.BasicProperties number = new AMQP.BasicProperties.Builder()
                .headers(Map.of("idem-key", 10086L))
                .build();
        assertThat(key.extract(with(longString, ""))).isEqualTo("10086:PAY");
        assertThat(key.extract(with(bytes, ""))).isEqualTo("10086:PAY");
        assertThat(key.extract(with(number, ""))).isEqualTo("10086");
        assertThat(key.extract(with(new AMQP.BasicProperties(), ""))).isNull();
        assertThat(key.describe()).isEqualTo("header 'idem-key'");
    }

    @Test
    void messageId_andBody() throws Exception {
        AMQP.BasicProperties props =
                new AMQP.BasicProperties.Builder().messageId("m-1").build();
        assertThat(KeyExtractor.messageId().extract(with(props, "order-7"))).isEqualTo("m-1");
        assertThat(KeyExtractor.body(b -> new String(b, StandardCharsets.UTF_8) + ":CANCEL")
                        .extract(with(props, "order-7")))
                .isEqualTo("order-7:CANCEL");
    }

    @Test
    void header_bytesThatDifferOnlyInInvalidUtf8_areDifferentKeys_inEveryFieldType() throws Exception {
        KeyExtractor key = KeyExtractor.header("idem-key");
        byte[] a = {'k', (byte) 0xFF};
        byte[] b = {'k', (byte) 0xFE};
        assertThat(key.extract(with(headers(a), ""))).isEqualTo("hex:6bff");
        assertThat(key.extract(with(headers(b), ""))).isEqualTo("hex:6bfe");
        assertThat(key.extract(with(headers(LongStringHelper.asLongString(a)), "")))
                .isEqualTo("hex:6bff");
        assertThat(key.extract(with(headers(LongStringHelper.asLongString(b)), "")))
                .isEqualTo("hex:6bfe");
        assertThat(key.extract(with(headers("hex:6bff"), "")))
                .as("a text key that looks like the hex form of other bytes is written in hex itself")
                .isNotEqualTo("hex:6bff");
    }

    @Test
    void header_textAContainerDecodedWithReplacementCharacters_isRefused() {
        assertThatThrownBy(() -> KeyExtractor.header("idem-key").extract(with(headers("k\uFFFD"), "")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("header 'idem-key' is not valid UTF-8");
    }

    @Test
    void header_ofAnotherType_isRefusedNamingIt() {
        KeyExtractor key = KeyExtractor.header("idem-key");
        assertThatThrownBy(() -> key.extract(with(headers(true), "")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("header 'idem-key' holds a java.lang.Boolean");
    }

    @Test
    void messageId_readByTheSameRuleAsKeyBytes_andRefusedWhenTheClientCouldNotDecodeIt() throws Exception {
        AMQP.BasicProperties control =
                new AMQP.BasicProperties.Builder().messageId("a\u0001b").build();
        assertThat(KeyExtractor.messageId().extract(with(control, ""))).isEqualTo("hex:610162");
        AMQP.BasicProperties replaced =
                new AMQP.BasicProperties.Builder().messageId("pay-\uFFFD").build();
        assertThatThrownBy(() -> KeyExtractor.messageId().extract(with(replaced, "")))
                .hasMessageContaining("not valid UTF-8");
    }

    private static AMQP.BasicProperties headers(Object value) {
        return new AMQP.BasicProperties.Builder()
                .headers(Map.of("idem-key", value))
                .build();
    }
}
