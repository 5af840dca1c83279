package dev.kvroute.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The {@code kvroute} launcher script's JVM command line: the repository's script, copied into a
 * scratch tree with an up-to-date stand-in jar (so it builds nothing), run by bash with a stand-in
 * {@code java} first on the PATH that records its arguments instead of starting a JVM. Covers each
 * command's collector and initial heap, {@code KVROUTE_HEAP} below and above the 512 MB initial heap
 * (below it a JVM refuses {@code -Xms} above {@code -Xmx}), {@code KVROUTE_JAVA_OPTS} replacing the
 * defaults, the Vector API module by the runtime's {@code release} file, arguments passed through
 * unchanged, and the class-data-sharing archive's training, use, retraining for a newer jar and
 * failure (a failed or empty training leaves no archive behind).
 */
class LauncherTest {
  private static final Path LAUNCHER = Path.of("..", "kvroute");

  @TempDir Path dir;
  private Path jdk;
  private Path record;

  @BeforeEach
  void scratchTree() throws IOException {
    Path tree = Files.createDirectories(dir.resolve("tree"));
    Files.copy(LAUNCHER, tree.resolve("kvroute"), StandardCopyOption.COPY_ATTRIBUTES);
    Path jar = Files.createDirectories(tree.resolve("kvroute-app/target")).resolve("kvroute.jar");
    Files.writeString(jar, "stand-in");
    jdk = Files.createDirectories(dir.resolve("jdk/bin")).getParent();
    record = dir.resolve("java-calls.txt");
    // One line per call, its arguments separated by tabs (no argument here holds a tab). A training
    // run (ArchiveClassesAtExit) writes the archive, as a JVM that ran the warm-up would; with
    // FAKE_TRAINING_EMPTY an empty one, with FAKE_TRAINING_FAILS a partial one and a failed exit.
    Path java = jdk.resolve("bin/java");
    Files.writeString(java, String.join("\n",
        "#!/usr/bin/env bash",
        "(IFS=$'\\t'; echo \"$*\") >>\"$FAKE_JAVA_RECORD\"",
        "for a in \"$@\"; do",
        "  case \"$a\" in -XX:ArchiveClassesAtExit=*)",
        "    [ -n \"${FAKE_TRAINING_EMPTY:-}\" ] && { : >\"${a#-XX:ArchiveClassesAtExit=}\"; exit 0; }",
        "    [ -n \"${FAKE_TRAINING_FAILS:-}\" ] && { echo partial >\"${a#-XX:ArchiveClassesAtExit=}\"; exit 1; }",
        "    echo archive >\"${a#-XX:ArchiveClassesAtExit=}\" ;;",
        "  esac",
        "done",
        "exit 0",
        ""));
    Files.setPosixFilePermissions(java, PosixFilePermissions.fromString("rwxr-xr-x"));
    // on a noexec temporary file system bash would skip the stand-in and run the real java
    assertThat(Files.isExecutable(java)).as("the stand-in java in %s can be executed (a temporary directory "
        + "mounted noexec cannot run it; point java.io.tmpdir elsewhere)", java).isTrue();
  }

  @Test
  void serveRunsTheSerialCollectorOnAPreTouchedHalfGigabyteHeap() throws Exception {
    List<String> args = lastCall(run(Map.of("KVROUTE_CDS", "0"), "serve", "--port", "8000"));

    assertThat(args).containsSubsequence("-Xmx4g", "-XX:MaxDirectMemorySize=2g", "-XX:+ExitOnOutOfMemoryError",
        "-XX:+UseSerialGC", "-Xms512m", "-XX:+AlwaysPreTouch", "-jar");
    assertThat(args).endsWith("serve", "--port", "8000");
    assertThat(args.get(args.indexOf("-jar") + 1)).endsWith("kvroute-app/target/kvroute.jar");
    assertThat(args).doesNotContain("--add-modules");
  }

  @Test
  void aHeapBelowTheInitialHeapIsAlsoTheInitialHeap() throws Exception {
    assertThat(lastCall(run(Map.of("KVROUTE_CDS", "0", "KVROUTE_HEAP", "256m"), "serve")))
        .contains("-Xmx256m", "-Xms256m").doesNotContain("-Xms512m");
    assertThat(lastCall(run(Map.of("KVROUTE_CDS", "0", "KVROUTE_HEAP", "262144k"), "epp")))
        .contains("-Xmx262144k", "-Xms262144k");
    assertThat(lastCall(run(Map.of("KVROUTE_CDS", "0", "KVROUTE_HEAP", "1g"), "serve")))
        .contains("-Xmx1g", "-Xms512m");
    assertThat(lastCall(run(Map.of("KVROUTE_CDS", "0", "KVROUTE_HEAP", "512m"), "simulate")))
        .contains("-Xmx512m", "-Xms512m");
  }

  @Test
  void eachCommandHasItsCollector() throws Exception {
    assertThat(lastCall(run(Map.of("KVROUTE_CDS", "0"), "epp")))
        .contains("-XX:+UseSerialGC", "-XX:+AlwaysPreTouch");
    assertThat(lastCall(run(Map.of("KVROUTE_CDS", "0", "KVROUTE_HEAP", "6g"), "demo")))
        .contains("-XX:+UseZGC", "-Xms6g", "-Xmx6g").doesNotContain("-XX:+AlwaysPreTouch");
    assertThat(lastCall(run(Map.of("KVROUTE_CDS", "0"), "simulate", "--workload", "seed")))
        .contains("-XX:+UseParallelGC", "-Xms512m").doesNotContain("-XX:+UseSerialGC")
        .endsWith("simulate", "--workload", "seed");
  }

  @Test
  void javaOptsReplaceTheDefaultsAndComeLast() throws Exception {
    List<String> args = lastCall(run(Map.of("KVROUTE_CDS", "0", "KVROUTE_JAVA_OPTS", "-XX:+UseZGC -Xmx1g"), "serve"));

    assertThat(args).doesNotContain("-XX:+UseSerialGC", "-XX:+AlwaysPreTouch", "-Xms512m");
    // the launcher's -Xmx4g comes first, so the later -Xmx1g is the one the JVM keeps
    assertThat(args).containsSubsequence("-Xmx4g", "-XX:+UseZGC", "-Xmx1g", "-jar");
  }

  @Test
  void theVectorModuleIsAddedWhenTheRuntimeHasIt() throws Exception {
    Files.writeString(jdk.resolve("release"),
        "JAVA_VERSION=\"17.0.15\"\nMODULES=\"java.base jdk.incubator.vector jdk.jfr\"\n");

    assertThat(lastCall(run(Map.of("KVROUTE_CDS", "0"), "serve")))
        .containsSubsequence("--add-modules", "jdk.incubator.vector", "-jar");
    assertThat(lastCall(run(Map.of("KVROUTE_CDS", "0", "KVROUTE_VECTOR", "0"), "serve")))
        .doesNotContain("--add-modules", "jdk.incubator.vector");
  }

  @Test
  void theClassDataArchiveIsTrainedOnceThenUsed() throws Exception {
    Path jsa = dir.resolve("tree/kvroute-app/target/kvroute.jsa");

    Result first = run(Map.of(), "serve");
    assertThat(first.calls).hasSize(2);
    assertThat(first.calls.get(0)).anyMatch(a -> a.startsWith("-XX:ArchiveClassesAtExit="))
        .containsSubsequence("-jar", "serve", "--warm-up-only");
    assertThat(first.stderr).contains("training the class-data-sharing archive");
    assertThat(jsa).exists();
    assertThat(lastCall(first)).contains("-XX:SharedArchiveFile=" + jsa.toAbsolutePath().normalize(), "-Xshare:auto");

    Result second = run(Map.of(), "serve");
    assertThat(second.calls).as("an archive newer than the jar is not trained again").hasSize(1);
    assertThat(lastCall(second)).contains("-XX:SharedArchiveFile=" + jsa.toAbsolutePath().normalize());
  }

  @Test
  void aFailedTrainingStartsWithoutAnArchive() throws Exception {
    Result result = run(Map.of("FAKE_TRAINING_FAILS", "1"), "serve");

    assertThat(result.calls).hasSize(2);
    assertThat(result.stderr).contains("no class-data-sharing archive");
    assertThat(lastCall(result)).noneMatch(a -> a.startsWith("-XX:SharedArchiveFile="));
    assertThat(dir.resolve("tree/kvroute-app/target")).isDirectoryNotContaining("glob:**.jsa*");
  }

  @Test
  void cdsZeroLeavesTheArchiveOut() throws Exception {
    Result r = run(Map.of("KVROUTE_CDS", "0"), "serve");
    assertThat(r.calls).as("no training run").hasSize(1);
    assertThat(lastCall(r)).noneMatch(a -> a.startsWith("-XX:SharedArchiveFile=") || a.startsWith("-XX:ArchiveClassesAtExit="));
  }

  @Test
  void aJarNewerThanTheArchiveRetrainsIt() throws Exception {
    Path jsa = dir.resolve("tree/kvroute-app/target/kvroute.jsa");
    Path jar = dir.resolve("tree/kvroute-app/target/kvroute.jar");
    run(Map.of(), "serve");
    // a rebuilt jar: newer than the archive by more than any file system's timestamp granularity
    Files.setLastModifiedTime(jar, FileTime.fromMillis(Files.getLastModifiedTime(jsa).toMillis() + 10_000));
    assertThat(run(Map.of(), "serve").calls).as("trained again, then run").hasSize(2);
  }

  @Test
  void argumentsKeepTheirSpaces() throws Exception {
    assertThat(lastCall(run(Map.of("KVROUTE_CDS", "0"), "serve", "--policy", "a b", "*")))
        .endsWith("-jar", dir.resolve("tree/kvroute-app/target/kvroute.jar").toString(), "serve", "--policy", "a b", "*");
  }

  @Test
  void anEmptyArchiveIsNotUsed() throws Exception {
    Result r = run(Map.of("FAKE_TRAINING_EMPTY", "1"), "serve");
    assertThat(lastCall(r)).noneMatch(a -> a.startsWith("-XX:SharedArchiveFile="));
    assertThat(dir.resolve("tree/kvroute-app/target")).isDirectoryNotContaining("glob:**.jsa*");
  }

  private record Result(List<List<String>> calls, String stderr) {}

  private static List<String> lastCall(Result result) {
    assertThat(result.calls).isNotEmpty();
    return result.calls.get(result.calls.size() - 1);
  }

  private Result run(Map<String, String> env, String... command) throws Exception {
    Files.deleteIfExists(record);
    List<String> cmd = new ArrayList<>(List.of("bash", dir.resolve("tree/kvroute").toString()));
    cmd.addAll(List.of(command));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectOutput(ProcessBuilder.Redirect.DISCARD);
    Map<String, String> e = pb.environment();
    for (String k : new ArrayList<>(e.keySet())) {
      if (k.startsWith("KVROUTE_")) {
        e.remove(k); // the launcher's own settings come from each test only
      }
    }
    e.put("PATH", jdk.resolve("bin") + ":" + e.getOrDefault("PATH", "/usr/bin:/bin"));
    e.put("FAKE_JAVA_RECORD", record.toString());
    e.putAll(env);
    Path stderr = dir.resolve("stderr.txt");
    pb.redirectError(stderr.toFile());
    Process p = pb.start();
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("the launcher finished").isTrue();
    String err = Files.readString(stderr, StandardCharsets.UTF_8);
    assertThat(p.exitValue()).as("launcher exit status; stderr: %s", err).isZero();
    List<List<String>> calls = new ArrayList<>();
    if (Files.exists(record)) {
      for (String line : Files.readAllLines(record, StandardCharsets.UTF_8)) {
        calls.add(List.of(line.split("\t", -1)));
      }
    }
    return new Result(calls, err);
  }
}
