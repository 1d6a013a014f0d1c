package dev.idem.outbox;

import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/** Headers in one text column: {@code name=value&name=value}, values URL-encoded (names are plain, see the message). */
final class HeaderCodec {
    private HeaderCodec() {}

    static String encode(Map<String, String> headers) {
        StringBuilder text = new StringBuilder();
        headers.forEach((name, value) -> {
            if (text.length() > 0) {
                text.append('&');
            }
            text.append(name).append('=').append(URLEncoder.encode(value, StandardCharsets.UTF_8));
        });
        return text.toString();
    }

    static Map<String, String> decode(String text) {
        Map<String, String> headers = new LinkedHashMap<>();
        if (text.isEmpty()) {
            return headers;
        }
        for (String pair : text.split("&")) {
            int eq = pair.indexOf('=');
            headers.put(pair.substring(0, eq), URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
        }
        return headers;
    }
}
