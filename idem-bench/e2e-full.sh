#!/usr/bin/env bash
# The complete end-to-end benchmark on equal terms (issue 24), every row of docs/benchmarks.md in one run:
# PostgreSQL and MariaDB at 1 and 4 threads, each on an auto-commit and a manual-commit pool, on empty tables and with
# 10 million retained marks per dedup table, the fault runs, the claims-only rows, and the scale facts (bytes per mark,
# purge under load, Redis memory per mark on a private Redis). Run it on a quiet machine; it takes two to three hours
# (the 10-million-row fills included) and needs about 15 GB of free disk for the databases.
#
#   idem-bench/e2e-full.sh [more EndToEnd options]      # the report goes to e2e-full-<date>.md
#   MVN_ARGS=-Dmaven.repo.local=/path idem-bench/e2e-full.sh   # another local Maven repository
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC2086 # MVN_ARGS, e.g. -Dmaven.repo.local=..., is split on purpose
./mvnw -q -B -ntp -pl idem-bench -am package -DskipTests ${MVN_ARGS:-}
out="e2e-full-$(date -u +%Y-%m-%dT%H%M).md"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
java -Xmx4g -cp idem-bench/target/benchmarks.jar dev.idem.bench.e2e.EndToEnd \
    --deliveries 20000 --rounds 3 --warmup 10000 \
    --scenarios postgresql:1,postgresql:4,mariadb:1,mariadb:4 \
    --pools auto,manual \
    --retained 0,10000000 \
    --fault-scenarios postgresql:4,mariadb:4 \
    --timeout 900 \
    --out "$out" "$@"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg); report: $out" >&2
