package dev.idem.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ConsumerCommandTest {

    @Test
    void aPlaceholderWithShellCharacters_reachesTheCommandAsOneWord() throws Exception {
        String url = "jdbc:postgresql://127.0.0.1:5432/test?user=postgres&ApplicationName=idem lab's";
        String command = new ConsumerCommand("printf '[%s]' {jdbcUrl} {topic}")
                .expand(Map.of("jdbcUrl", url, "topic", "payments"));

        Process p = new ProcessBuilder("sh", "-c", command).start();
        String printed = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);

        assertThat(p.waitFor()).isZero();
        assertThat(printed).isEqualTo("[" + url + "][payments]");
    }

    @Test
    void anUnknownPlaceholder_isABadOption_namingTheKnownOnes() {
        ConsumerCommand command = new ConsumerCommand("run --servers {bootstrapServers}");

        assertThatThrownBy(() -> command.expand(Map.of("bootstrap", "x", "topic", "t")))
                .isInstanceOf(LabOptions.BadOptionException.class)
                .hasMessageContaining("{bootstrapServers}")
                .hasMessageContaining("{bootstrap}");
    }

    @Test
    void consumerLabOptions_refuseWhatTheyCannotRun() {
        assertThatThrownBy(() -> ConsumerLabOptions.parse(
                        new String[] {"--consumer-cmd", "x", "--broker", "pulsar"}, java.nio.file.Path.of(".")))
                .isInstanceOf(LabOptions.BadOptionException.class)
                .hasMessageContaining("is not kafka, nats, rabbitmq or rocketmq");
        assertThatThrownBy(() -> ConsumerLabOptions.parse(
                        new String[] {"--consumer-cmd", "x", "--account-sql", "INSERT INTO a VALUES (1)"},
                        java.nio.file.Path.of(".")))
                .isInstanceOf(LabOptions.BadOptionException.class)
                .hasMessageContaining("exactly one ?");
        assertThatThrownBy(() -> new ConsumerCommand(" "))
                .isInstanceOf(LabOptions.BadOptionException.class)
                .hasMessageContaining("--consumer-cmd is empty");
    }
}
