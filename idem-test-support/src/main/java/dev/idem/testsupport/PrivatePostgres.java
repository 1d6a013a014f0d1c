package dev.idem.testsupport;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.UserPrincipal;
import java.nio.file.attribute.UserPrincipalNotFoundException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * A private PostgreSQL: {@code initdb} with trust authentication, {@code pg_ctl start} with {@code fsync=off} (a
 * killed server keeps what it committed; only a machine crash could lose it), {@code pg_ctl stop}. As root, every
 * PostgreSQL command runs as the {@code postgres} OS user through {@code runuser}, in a directory that user owns.
 */
final class PrivatePostgres extends PrivateServer {
    static final String ENGINE = "postgres";
    private static final Path VERSIONS = Path.of("/usr/lib/postgresql");
    private static final Path RUNUSER = Path.of("/usr/sbin/runuser");
    private static final String OS_USER = "postgres";

    private final Path bin;
    private final Path data;
    private final Path commands;
    private final Path log;
    private boolean crashed;

    private PrivatePostgres(Path bin, Path directory, int port) {
        super("PostgreSQL", directory, port);
        this.bin = bin;
        this.data = directory.resolve("data");
        this.commands = directory.resolve("commands.log");
        this.log = directory.resolve("postgres.log");
    }

    /** Why no private PostgreSQL can run here, if so. */
    static Optional<String> missing() {
        if (binaries().isEmpty()) {
            return Optional.of("no PostgreSQL binaries (initdb, pg_ctl) under " + VERSIONS
                    + ": install the postgresql package to get a private PostgreSQL");
        }
        if (PrivateServer.isRoot()) {
            if (!Files.isExecutable(RUNUSER)) {
                return Optional.of("PostgreSQL refuses to run as root and " + RUNUSER + " is missing");
            }
            try {
                osUser();
            } catch (IOException e) {
                return Optional.of("PostgreSQL refuses to run as root and there is no '" + OS_USER + "' OS user");
            }
        }
        return Optional.empty();
    }

    static PrivateServer create() {
        Path bin = binaries().orElseThrow();
        Path directory = newDirectory(ENGINE);
        try {
            if (PrivateServer.isRoot()) {
                Files.setOwner(directory, osUser());
            }
        } catch (IOException e) {
            deleteRecursively(directory);
            throw new UncheckedIOException("cannot hand " + directory + " to the " + OS_USER + " OS user", e);
        }
        return started(new PrivatePostgres(bin, directory, FreePorts.any()));
    }

    @Override
    public String url() {
        return "jdbc:postgresql://127.0.0.1:" + port() + "/postgres?user=postgres";
    }

    @Override
    void initialize() {
        run(
                asPostgres(
                        bin.resolve("initdb").toString(),
                        "-D",
                        data.toString(),
                        "-A",
                        "trust",
                        "-U",
                        "postgres",
                        "-E",
                        "UTF8",
                        "--no-locale",
                        "--no-sync",
                        "--no-instructions"),
                commands);
    }

    @Override
    void launch() {
        run(
                asPostgres(
                        bin.resolve("pg_ctl").toString(),
                        "-D",
                        data.toString(),
                        "-l",
                        log.toString(),
                        "-w",
                        "-t",
                        Long.toString(START_TIMEOUT.toSeconds()),
                        "-o",
                        "-p " + port() + " -c listen_addresses=127.0.0.1 -c unix_socket_directories=" + directory()
                                + " -c fsync=off",
                        "start"),
                commands);
        crashed = false;
    }

    @Override
    void shutdown() {
        pgCtlStop("fast");
    }

    /**
     * The killed postmaster's processes may linger as zombies until the init process reaps them, and PostgreSQL
     * refuses to start while the PID in its lock files exists; after a real crash that PID is gone, so the lock files
     * go too. PostgreSQL's own check of the old shared memory segment still runs.
     */
    @Override
    void afterKill() {
        try {
            Files.deleteIfExists(data.resolve("postmaster.pid"));
            Files.deleteIfExists(directory().resolve(".s.PGSQL." + port() + ".lock"));
            Files.deleteIfExists(directory().resolve(".s.PGSQL." + port()));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot remove the killed server's lock files", e);
        }
        crashed = true;
    }

    /** Immediate mode: the postmaster exits at once but still removes its shared memory segment. */
    @Override
    void stopForGood() {
        if (crashed) {
            launch(); // only a postmaster that starts removes the killed one's shared memory segment
        }
        if (postmaster().isPresent()) {
            pgCtlStop("immediate");
        }
    }

    @Override
    List<ProcessHandle> processes() {
        return withDescendants(postmaster().orElse(null));
    }

    private void pgCtlStop(String mode) {
        run(
                asPostgres(
                        bin.resolve("pg_ctl").toString(),
                        "-D",
                        data.toString(),
                        "-m",
                        mode,
                        "-w",
                        "-t",
                        Long.toString(START_TIMEOUT.toSeconds()),
                        "stop"),
                commands);
    }

    private Optional<ProcessHandle> postmaster() {
        return postmasterOf(data);
    }

    /** Stops the PostgreSQL of a dead JVM's directory with {@code pg_ctl stop -m immediate}. */
    static void stopOrphan(Path directory) {
        Path data = directory.resolve("data");
        Optional<Path> bin = binaries();
        if (postmasterOf(data).isEmpty() || bin.isEmpty()) {
            return;
        }
        List<String> command = new ArrayList<>();
        if (PrivateServer.isRoot()) {
            command.addAll(List.of(RUNUSER.toString(), "-u", OS_USER, "--"));
        }
        command.addAll(List.of(bin.get().resolve("pg_ctl").toString(), "-D", data.toString(), "-m", "immediate", "-w"));
        command.add("stop");
        try {
            new ProcessBuilder(command)
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .start()
                    .waitFor();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The live postmaster of {@code data}, from the first line of its {@code postmaster.pid}. */
    private static Optional<ProcessHandle> postmasterOf(Path data) {
        Path pidFile = data.resolve("postmaster.pid");
        try {
            List<String> lines = Files.readAllLines(pidFile);
            return lines.isEmpty()
                    ? Optional.empty()
                    : ProcessHandle.of(Long.parseLong(lines.get(0).trim())).filter(ProcessHandle::isAlive);
        } catch (IOException | NumberFormatException e) {
            return Optional.empty();
        }
    }

    private List<String> asPostgres(String... command) {
        List<String> full = new ArrayList<>();
        if (PrivateServer.isRoot()) {
            full.addAll(List.of(RUNUSER.toString(), "-u", OS_USER, "--"));
        }
        full.addAll(List.of(command));
        return full;
    }

    private static UserPrincipal osUser() throws IOException {
        try {
            return Path.of("/").getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName(OS_USER);
        } catch (UserPrincipalNotFoundException e) {
            throw new IOException("no OS user " + OS_USER, e);
        }
    }

    /** The newest {@code /usr/lib/postgresql/<version>/bin} that has initdb and pg_ctl. */
    private static Optional<Path> binaries() {
        if (!Files.isDirectory(VERSIONS)) {
            return Optional.empty();
        }
        try (Stream<Path> versions = Files.list(VERSIONS)) {
            return versions.map(v -> v.resolve("bin"))
                    .filter(b -> Files.isExecutable(b.resolve("initdb")) && Files.isExecutable(b.resolve("pg_ctl")))
                    .max(Comparator.comparingInt(PrivatePostgres::majorVersion));
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    private static int majorVersion(Path bin) {
        try {
            Path versionDir = bin.getParent();
            Path version = versionDir == null ? null : versionDir.getFileName();
            return version == null ? -1 : Integer.parseInt(version.toString());
        } catch (NumberFormatException e) {
            return -1;
        }
    }
}
