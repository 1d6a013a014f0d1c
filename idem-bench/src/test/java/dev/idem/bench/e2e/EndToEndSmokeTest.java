package dev.idem.bench.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.bench.e2e.EndToEnd.Measurement;
import java.util.List;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;

/**
 * A tiny run of the end-to-end harness under faults (handler failures, crashes inside the handler and after the
 * commit, racing copies), one database at a time: every Idem contender and both hand-written baselines end with every
 * payment applied exactly once, and the check is not blind (no guard double-charges, Spring Integration's receiver
 * loses failed messages). The Redis contenders (Idem's per message and batched, the {@code SET NX} recipe) join when
 * the fixture finds Redis. No timing is asserted.
 */
class EndToEndSmokeTest {
    /** The lease stores warn on every simulated crash, Lettuce on every connection: keep the test output readable. */
    private static final List<Logger> QUIET = List.of(Logger.getLogger("dev.idem"), Logger.getLogger("io.lettuce"));

    static {
        QUIET.forEach(logger -> logger.setLevel(Level.SEVERE));
    }

    private static List<Measurement> runUnderFaults(String database) throws Exception {
        EndToEnd.Options options = EndToEnd.parse(new String[] {
            "--deliveries", "300",
            "--accounts", "50",
            "--rounds", "1",
            "--scenarios", "none",
            "--fault-scenarios", database + ":2",
            "--handler-failures", "0.03",
            "--crashes-in-handler", "0.02",
            "--crashes-after-commit", "0.02",
            "--batch", "20",
            "--lease", "300",
            "--timeout", "60"
        });
        EndToEnd.Report report = EndToEnd.run(options);
        assertThat(report.markdown()).contains("| contender |");
        if (report.skipped().stream().noneMatch(s -> s.startsWith("Redis"))) {
            assertThat(report.measurements())
                    .extracting(Measurement::contender)
                    .contains("idem-redis", "idem-redis-batch", "redis-setnx");
        }
        return report.measurements();
    }

    private static void assertIdemExactlyOnce(List<Measurement> measurements) {
        List<Measurement> idem = measurements.stream()
                .filter(m -> m.contender().startsWith("idem-") || m.contender().startsWith("hand"))
                .toList();
        assertThat(idem)
                .extracting(Measurement::contender)
                .contains(
                        "hand",
                        "hand-batch",
                        "idem-inbox",
                        "idem-inbox-batch",
                        "idem-state-machine",
                        "idem-jdbc-lease");
        for (Measurement m : idem) {
            assertThat(m.run().finished()).as(m.contender() + " finished").isTrue();
            assertThat(m.run().crashes()).as(m.contender() + " met crashes").isPositive();
            assertThat(m.check()).as(m.contender()).isNotNull();
            assertThat(m.check().lost()).as(m.contender() + " lost").isZero();
            assertThat(m.check().doubled()).as(m.contender() + " doubled").isZero();
            assertThat(m.check().accountsOff())
                    .as(m.contender() + " balances off")
                    .isZero();
            assertThat(m.run().deadLettered())
                    .as(m.contender() + " dead-lettered")
                    .isZero();
        }
        assertThat(find(measurements, "no-guard").check().doubled()).isPositive();
        assertThat(find(measurements, "si-jdbc").check().lost()).isPositive();
    }

    private static Measurement find(List<Measurement> measurements, String id) {
        return measurements.stream()
                .filter(m -> m.contender().equals(id))
                .findFirst()
                .orElseThrow();
    }

    @Test
    void batchedContenders_runTheirTimedRoundsOnTheLongerStream() throws Exception {
        EndToEnd.Report report = EndToEnd.run(EndToEnd.parse(new String[] {
            "--deliveries", "50",
            "--batch-deliveries", "400",
            "--duplicates", "0",
            "--rounds", "1",
            "--warmup", "0",
            "--scenarios", "h2:1",
            "--fault-scenarios", "none",
            "--contenders", "hand-batch,idem-inbox-batch",
            "--no-redis"
        }));

        assertThat(find(report.measurements(), "no-guard").check().ledgerRows()).isEqualTo(50);
        assertThat(find(report.measurements(), "hand-batch").check().ledgerRows())
                .isEqualTo(400);
        assertThat(find(report.measurements(), "idem-inbox-batch").check().ledgerRows())
                .isEqualTo(400);
    }

    @Test
    void faultyStream_onH2_everyIdemContenderAppliesEachPaymentOnce() throws Exception {
        assertIdemExactlyOnce(runUnderFaults("h2"));
    }

    @Test
    void faultyStream_onPostgres_everyIdemContenderAppliesEachPaymentOnce() throws Exception {
        assertIdemExactlyOnce(runUnderFaults("postgresql"));
    }

    @Test
    void faultyStream_onMariaDb_everyIdemContenderAppliesEachPaymentOnce() throws Exception {
        assertIdemExactlyOnce(runUnderFaults("mariadb"));
    }
}
