package dev.kvroute.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import dev.kvroute.proxy.KubernetesEnvironment;
import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * {@code kvroute epp} flag checks found missing by the 2026-12 break test: each is one line naming the
 * flag and a non-zero exit, decided before anything starts or any cluster is asked.
 */
final class EppCommandTest {
  private final StringWriter err = new StringWriter();

  private int run(String... args) {
    CommandLine cl = new CommandLine(new EppCommand());
    cl.setErr(new PrintWriter(err));
    cl.setOut(new PrintWriter(new StringWriter()));
    return cl.execute(args);
  }

  @Test
  void grpcPort99999WasAcceptedAndIsNowAUsageErrorBeforeStartUp() {
    assertThat(run("--grpc-port", "99999", "--backend", "http://127.0.0.1:1")).isEqualTo(CommandLine.ExitCode.USAGE);
    assertThat(err.toString()).isEqualTo("kvroute epp: --grpc-port: 99999 (expected: 0 (ephemeral) or 1..65535)"
        + System.lineSeparator());
  }

  @Test
  void metricsPortOutOfRangeIsAUsageErrorAndMinusOneStillMeansOff() {
    assertThat(run("--metrics-port", "70000", "--backend", "http://127.0.0.1:1")).isEqualTo(CommandLine.ExitCode.USAGE);
    assertThat(err.toString()).startsWith("kvroute epp: --metrics-port: 70000 (expected: -1 (off), 0 (ephemeral) or 1..65535)");
    EppCommand.checkPort("--metrics-port", -1, true);
    EppCommand.checkPort("--grpc-port", 0, false);
    EppCommand.checkPort("--grpc-port", 65535, false);
  }

  @Test
  void backendWithPoolNameWasAcceptedAndIsNowRefused() {
    assertThat(run("--pool-name", "x", "--backend", "http://127.0.0.1:1")).isEqualTo(CommandLine.ExitCode.USAGE);
    assertThat(err.toString()).startsWith("kvroute epp: --pool-name x with --backend (expected: one source of endpoints:")
        .doesNotContain("\tat ");
  }

  @Test
  void backendWithK8sSelectorNamedTheMissingK8sPortAndNowNamesTheCombination() {
    assertThat(run("--backend", "http://127.0.0.1:1", "--k8s-selector", "app=vllm")).isEqualTo(CommandLine.ExitCode.USAGE);
    assertThat(err.toString()).startsWith("kvroute epp: --k8s-selector app=vllm with --backend (expected: one source of"
        + " endpoints:").doesNotContain("k8s-port");
    err.getBuffer().setLength(0);
    assertThat(run("--backend", "http://127.0.0.1:1", "--k8s-selector", "app=vllm", "--k8s-port", "http"))
        .isEqualTo(CommandLine.ExitCode.USAGE);
    assertThat(err.toString()).startsWith("kvroute epp: --k8s-selector app=vllm with --backend");
  }

  @Test
  void backendsInTheFileWithK8sSelectorAreRefusedToo(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
      throws Exception {
    java.nio.file.Path yaml = dir.resolve("epp.yaml");
    java.nio.file.Files.writeString(yaml, "backends:\n  - url: http://127.0.0.1:1\n");
    assertThat(run("--config", yaml.toString(), "--k8s-selector", "app=vllm", "--k8s-port", "http"))
        .isEqualTo(CommandLine.ExitCode.USAGE);
    assertThat(err.toString()).startsWith("kvroute epp: --k8s-selector app=vllm with backends in " + yaml);
  }

  @Test
  void k8sSelectorWithoutK8sPortNamesTheFlag() {
    assertThat(run("--k8s-selector", "app=vllm")).isEqualTo(CommandLine.ExitCode.USAGE);
    assertThat(err.toString()).startsWith("kvroute epp: --k8s-selector app=vllm without --k8s-port (expected:");
  }

  @Test
  void poolNameOutsideKubernetesWasSilentThenUnclearAndNowFailsAtOnceSayingWhy() {
    assumeThat(KubernetesEnvironment.missing(null)).as("this machine has a Kubernetes configuration").isNotNull();
    assertThat(run("--pool-name", "x", "--grpc-port", "0", "--metrics-port", "-1"))
        .isEqualTo(CommandLine.ExitCode.SOFTWARE);
    // the message comes from the check made before any client is built (no 36 s of retries to a
    // kubernetes.default.svc that does not resolve), and says what to do instead
    assertThat(err.toString()).startsWith("kvroute epp: cannot read InferencePool x: no Kubernetes configuration found")
        .contains("--kubeconfig").contains("--backend").doesNotContain("\tat ");
  }
}
