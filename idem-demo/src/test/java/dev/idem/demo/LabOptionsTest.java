package dev.idem.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LabOptionsTest {
    @TempDir
    Path out;

    private record Run(int status, String stdout, String stderr) {}

    private Run run(String... args) {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        ByteArrayOutputStream e = new ByteArrayOutputStream();
        String[] all = new String[args.length + 2];
        System.arraycopy(args, 0, all, 0, args.length);
        all[args.length] = "--out";
        all[args.length + 1] = out.toString();
        int status = Main.run(
                all,
                new PrintStream(o, true, StandardCharsets.UTF_8),
                new PrintStream(e, true, StandardCharsets.UTF_8));
        return new Run(status, o.toString(StandardCharsets.UTF_8), e.toString(StandardCharsets.UTF_8));
    }

    private static void assertOneClearLine(Run r, String... mentions) {
        assertThat(r.status()).isEqualTo(2);
        assertThat(r.stderr().strip().lines()).hasSize(1);
        assertThat(r.stderr()).startsWith("idem-lab: ").contains(mentions);
    }

    @Test
    void negativeRate_exitsWith2_namingTheOptionAndTheRange() {
        assertOneClearLine(run("--crash-rate", "-0.1"), "--crash-rate", "between 0 and 1");
    }

    @Test
    void percentInsteadOfFraction_exitsWith2_suggestingTheFraction() {
        assertOneClearLine(run("--producer-retry-rate=5"), "--producer-retry-rate", "write 0.05");
    }

    @Test
    void rateThatIsNotANumber_exitsWith2() {
        assertOneClearLine(run("--reorder-rate", "often"), "--reorder-rate", "fraction");
    }

    @Test
    void unknownJdbcScheme_exitsWith2_listingTheSupportedOnes() {
        assertOneClearLine(run("--jdbc-url", "jdbc:oracle:thin:@x:1521:db"), "jdbc:oracle", "jdbc:postgresql");
    }

    @Test
    void unreachableDatabase_exitsWith2_sayingHowToFixIt() {
        assertOneClearLine(
                run("--jdbc-url", "jdbc:postgresql://127.0.0.1:1/nothing?user=x&connectTimeout=2"),
                "cannot connect to the database",
                "--jdbc-url");
    }

    @Test
    void unknownRedisScheme_exitsWith2() {
        assertOneClearLine(run("--redis-url", "http://127.0.0.1:6379"), "--redis-url", "redis://");
    }

    @Test
    void unreachableRedis_exitsWith2_beforeAnythingRuns() {
        assertOneClearLine(
                run("--jdbc-url", "jdbc:h2:mem:opts;DB_CLOSE_DELAY=-1", "--redis-url", "redis://127.0.0.1:1"),
                "Redis does not answer",
                "--redis-url");
    }

    @Test
    void unknownBroker_exitsWith2_listingTheBrokers() {
        assertOneClearLine(run("--broker", "pulsar"), "--broker", "kafka, rocketmq, rabbitmq, nats");
    }

    @Test
    void kafkaBootstrapWithAnotherBroker_exitsWith2() {
        assertOneClearLine(run("--broker", "nats", "--kafka-bootstrap", "127.0.0.1:9092"), "--kafka-bootstrap");
    }

    @Test
    void rocketmqNamesrvWithAnotherBroker_exitsWith2() {
        assertOneClearLine(run("--broker", "nats", "--rocketmq-namesrv", "127.0.0.1:9876"), "--rocketmq-namesrv");
    }

    @Test
    void rocketmqNamesrvNotHostPort_exitsWith2_withAnExample() {
        assertOneClearLine(
                run("--broker", "rocketmq", "--rocketmq-namesrv", "localhost"),
                "--rocketmq-namesrv 'localhost' is not a list of host:port",
                "127.0.0.1:9876");
    }

    @Test
    void unreachableRocketMqNameServer_exitsWith2_namingTheOptionAndHowToStartOne() {
        assertOneClearLine(
                run(
                        "--broker",
                        "rocketmq",
                        "--jdbc-url",
                        "jdbc:h2:mem:optsrocketmq;DB_CLOSE_DELAY=-1",
                        "--no-redis",
                        "--rocketmq-namesrv",
                        "127.0.0.1:1"),
                "RocketMQ does not answer",
                "--rocketmq-namesrv",
                "start one");
    }

    @Test
    void unreachableRabbitMQ_exitsWith2_namingTheOptionAndHowToStartOne() {
        assertOneClearLine(
                run(
                        "--broker",
                        "rabbitmq",
                        "--jdbc-url",
                        "jdbc:h2:mem:optsrabbit;DB_CLOSE_DELAY=-1",
                        "--no-redis",
                        "--rabbitmq-url",
                        "amqp://guest:guest@127.0.0.1:1"),
                "RabbitMQ does not answer",
                "--rabbitmq-url",
                "start one");
    }

    @Test
    void unreachableNats_exitsWith2_namingTheOptionAndHowToStartOne() {
        assertOneClearLine(
                run(
                        "--broker",
                        "nats",
                        "--jdbc-url",
                        "jdbc:h2:mem:optsnats;DB_CLOSE_DELAY=-1",
                        "--no-redis",
                        "--nats-url",
                        "nats://127.0.0.1:1"),
                "NATS does not answer",
                "--nats-url",
                "nats-server -js");
    }

    @Test
    void unknownOption_exitsWith2_pointingToHelp() {
        assertOneClearLine(run("--double-charge-everything"), "unknown option", "--help");
    }

    @Test
    void optionWithoutValue_exitsWith2() {
        assertOneClearLine(run("--orders"), "--orders needs a value");
    }

    @Test
    void zeroOrders_exitsWith2() {
        assertOneClearLine(run("--orders", "0"), "--orders must be between 1");
    }

    @Test
    void consumerFaultRatesAboveOne_exitWith2() {
        assertOneClearLine(
                run("--crash-rate", "0.5", "--concurrent-rate", "0.4", "--consumer-timeout-rate", "0.3"),
                "add up to more than 1");
    }

    @Test
    void help_printsUsage_andExits0() {
        Run r = run("--help");
        assertThat(r.status()).isZero();
        assertThat(r.stdout()).contains("--orders N", "--jdbc-url", "Exit status");
    }

    @Test
    void defaults_areAFewThousandOrders_withEveryFaultOn() {
        LabOptions o = LabOptions.parse(new String[0], out);
        assertThat(o.orders()).isEqualTo(3000);
        assertThat(o.broker()).isEqualTo("kafka");
        assertThat(o.rabbitmqUrl()).isEqualTo("amqp://guest:guest@127.0.0.1:5672");
        assertThat(o.natsUrl()).isEqualTo("nats://127.0.0.1:4222");
        assertThat(o.kafkaBootstrap()).isEmpty();
        assertThat(o.rocketmqNamesrv()).isEmpty();
        assertThat(o.jdbcUrl()).isEmpty();
        assertThat(o.out()).isEqualTo(out.resolve("idem-lab-out"));
        LabOptions.Faults f = o.faults();
        assertThat(java.util.List.of(
                        f.producerRetry(), f.appResend(), f.consumerTimeout(), f.concurrent(), f.crash(), f.reorder()))
                .allMatch(r -> r > 0);
    }
}
