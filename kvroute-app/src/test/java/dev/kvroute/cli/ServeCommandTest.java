package dev.kvroute.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.kvroute.engine.server.MockEngineOptions;
import dev.kvroute.proxy.KvrouteServer;
import dev.kvroute.proxy.config.ConfigException;
import dev.kvroute.proxy.config.ConfigLoader;
import dev.kvroute.proxy.config.DiscoveryConfig;
import dev.kvroute.proxy.config.KubernetesDiscoveryConfig;
import dev.kvroute.proxy.config.ProxyConfig;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

final class ServeCommandTest {

  @Test
  void everyYamlKeyHasAFlag() throws Exception {
    JsonNode tree = new ObjectMapper(new YAMLFactory()).readTree(ConfigLoader.toYaml(ProxyConfig.defaults()));
    TreeSet<String> leaves = new TreeSet<>();
    collect(tree, "", leaves);
    // discovery.kubernetes is absent by default; its keys are those of the section when present
    JsonNode k8s = new ObjectMapper(new YAMLFactory()).readTree(ConfigLoader.toYaml(ProxyConfig.defaults()
        .withDiscovery(new DiscoveryConfig(KubernetesDiscoveryConfig.of("", "app=vllm", "http")))));
    collect(k8s.at("/discovery/kubernetes"), "discovery.kubernetes", leaves);
    leaves.remove("discovery"); // empty by default; --discovery switches the section, it is no key of its own
    assertThat(new TreeSet<>(ServeCommand.yamlKeysWithFlags())).isEqualTo(leaves);
  }

  private static void collect(JsonNode node, String prefix, TreeSet<String> out) {
    if (node.isObject() && !node.isEmpty()) { // an empty map (models.aliases, admission.tenantPriorities) is a leaf with a flag
      for (Map.Entry<String, JsonNode> e : node.properties()) {
        collect(e.getValue(), prefix.isEmpty() ? e.getKey() : prefix + "." + e.getKey(), out);
      }
    } else {
      out.add(prefix);
    }
  }

  @Test
  void flagsOverrideTheFile(@TempDir Path dir) throws Exception {
    Path yaml = dir.resolve("kvroute.yaml");
    Files.writeString(yaml, "port: 9000\npolicy:\n  name: sticky\ntimeouts:\n  idle: 30s\n");
    ServeCommand cmd = new ServeCommand();
    new CommandLine(cmd).parseArgs("--config", yaml.toString(), "--port", "9100", "--idle-timeout", "45s",
        "--backend", "http://10.0.0.5:8000,capacityTokens=1000", "--backend", "http://10.0.0.6:8000",
        "--no-circuit-breaker", "--cache-threshold", "0.5");
    ProxyConfig c = cmd.resolve();
    assertThat(c.port()).isEqualTo(9100);
    assertThat(c.policy().name()).isEqualTo("sticky");
    assertThat(c.policy().cacheThreshold()).isEqualTo(0.5);
    assertThat(c.timeouts().idle()).isEqualTo(Duration.ofSeconds(45));
    assertThat(c.backends()).hasSize(2);
    assertThat(c.backends().get(0).capacityTokens()).isEqualTo(1000);
    assertThat(c.circuitBreaker().enabled()).isFalse();
  }

  @Test
  void printConfigShowsTheEffectiveYaml() {
    StringWriter out = new StringWriter();
    CommandLine cl = new CommandLine(new ServeCommand());
    cl.setOut(new PrintWriter(out));
    int code = cl.execute("--print-config", "--backend", "http://127.0.0.1:8001", "--policy", "cost");
    assertThat(code).isZero();
    assertThat(out.toString()).contains("name: cost").contains("http://127.0.0.1:8001");
    assertThat(ConfigLoader.parse(out.toString(), Map.of()).policy().name()).isEqualTo("cost");
  }

  @Test
  void thePagesDefaultFollowsTheIndexModeAndAFlagWins() {
    for (String[] c : List.of(
        new String[] {"64", "--index", "approximate"},
        new String[] {"16", "--index", "precise"},
        new String[] {"16", "--index", "hybrid"},
        new String[] {"16", "--page-size-tokens", "16"},
        new String[] {"32", "--page-size-tokens", "32"})) {
      StringWriter out = new StringWriter();
      CommandLine cl = new CommandLine(new ServeCommand());
      cl.setOut(new PrintWriter(out));
      int code = cl.execute("--print-config", "--backend", "http://127.0.0.1:8001", c[1], c[2]);
      assertThat(code).as("%s %s", c[1], c[2]).isZero();
      assertThat(ConfigLoader.parse(out.toString(), Map.of()).routing().pageSizeTokens())
          .as("%s %s", c[1], c[2]).isEqualTo(Integer.parseInt(c[0]));
    }
  }

  @Test
  void printConfigDoesNotPrintTheAdminToken() {
    StringWriter out = new StringWriter();
    CommandLine cl = new CommandLine(new ServeCommand());
    cl.setOut(new PrintWriter(out));
    int code = cl.execute("--print-config", "--backend", "http://127.0.0.1:8001", "--admin-token", "s3cret-t0ken");
    assertThat(code).isZero();
    assertThat(out.toString()).doesNotContain("s3cret-t0ken").contains("token: REDACTED");
  }

  @Test
  void badValueIsAUsageErrorNamingTheOption() {
    StringWriter err = new StringWriter();
    CommandLine cl = new CommandLine(new ServeCommand());
    cl.setErr(new PrintWriter(err));
    int code = cl.execute("--backend", "http://127.0.0.1:8001", "--connect-timeout", "0s");
    assertThat(code).isEqualTo(CommandLine.ExitCode.USAGE);
    assertThat(err.toString()).contains("timeouts.connect: 0s (expected: > 0)");
  }

  @Test
  void printConfigRejectsAnUnknownPolicyOrTokenizerAsServeDoes() {
    for (String[] flag : List.of(new String[] {"--policy", "nope"}, new String[] {"--tokenizer", "nope"})) {
      StringWriter err = new StringWriter();
      CommandLine cl = new CommandLine(new ServeCommand());
      cl.setErr(new PrintWriter(err));
      cl.setOut(new PrintWriter(new StringWriter()));
      int code = cl.execute("--print-config", "--backend", "http://127.0.0.1:8001", flag[0], flag[1]);
      assertThat(code).as(flag[0]).isEqualTo(CommandLine.ExitCode.USAGE);
      assertThat(err.toString()).as(flag[0]).contains(": nope (expected: ");
    }
  }

  @Test
  void tokenizerEngineIsAcceptedWithItsDeadlineAndReuseShare() {
    StringWriter err = new StringWriter();
    StringWriter out = new StringWriter();
    CommandLine cl = new CommandLine(new ServeCommand());
    cl.setErr(new PrintWriter(err));
    cl.setOut(new PrintWriter(out));
    int code = cl.execute("--print-config", "--backend", "http://127.0.0.1:8001", "--tokenizer", "engine",
        "--tokenizer-timeout", "50ms", "--tokenizer-reuse", "0");
    assertThat(code).as(err.toString()).isZero();
    assertThat(out.toString()).contains("tokenizer: engine").contains("tokenizerTimeout: 50ms")
        .contains("tokenizerReuse: 0.0");

    StringWriter err2 = new StringWriter();
    CommandLine bad = new CommandLine(new ServeCommand());
    bad.setErr(new PrintWriter(err2));
    bad.setOut(new PrintWriter(new StringWriter()));
    assertThat(bad.execute("--print-config", "--backend", "http://127.0.0.1:8001", "--tokenizer", "engine",
        "--tokenizer-reuse", "2")).isEqualTo(CommandLine.ExitCode.USAGE);
    assertThat(err2.toString()).contains("routing.tokenizerReuse: 2.0 (expected: 0 to 1)");
  }

  @Test
  void aTokenizerDirectoryThatIsMissingOrCorruptOrHasNoTemplateStopsServeAtStartUp(
      @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
    java.nio.file.Files.writeString(dir.resolve("tokenizer.json"), "{corrupt");
    java.nio.file.Path noTemplate = java.nio.file.Files.createDirectory(dir.resolve("no-template"));
    java.nio.file.Files.writeString(noTemplate.resolve("tokenizer.json"),
        "{\"model\":{\"type\":\"WordLevel\",\"vocab\":{\"[UNK]\":0,\"a\":1},\"unk_token\":\"[UNK]\"},"
            + "\"pre_tokenizer\":{\"type\":\"Whitespace\"}}");
    Map<String, String> expected = Map.of(
        "hf:" + dir.resolve("missing"), "no tokenizer.json",
        "hf:" + dir, "not a tokenizer.json",
        "hf:" + noTemplate, "no chat template");
    for (Map.Entry<String, String> e : expected.entrySet()) {
      StringWriter err = new StringWriter();
      CommandLine cl = new CommandLine(new ServeCommand());
      cl.setErr(new PrintWriter(err));
      cl.setOut(new PrintWriter(new StringWriter()));
      int code = cl.execute("--backend", "http://127.0.0.1:8001", "--port", "0", "--tokenizer", e.getKey());
      assertThat(code).as(e.getKey()).isEqualTo(CommandLine.ExitCode.USAGE);
      assertThat(err.toString()).as(e.getKey()).contains("routing.tokenizer: ").contains(e.getValue());
    }
  }

  @Test
  void printConfigWithoutABackendPrintsTheEffectiveConfigurationWithAnEmptyBackendList() {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cl = new CommandLine(new ServeCommand());
    cl.setOut(new PrintWriter(out));
    cl.setErr(new PrintWriter(err));
    int code = cl.execute("--print-config", "--port", "9100");
    assertThat(code).isZero();
    assertThat(err.toString()).isEmpty();
    assertThat(out.toString()).contains("backends: []").contains("port: 9100");
    ServeCommand same = new ServeCommand();
    new CommandLine(same).parseArgs("--port", "9100");
    ProxyConfig printed = ConfigLoader.parse(out.toString(), Map.of());
    assertThat(printed).isEqualTo(same.resolve());
    assertThat(printed.backends()).isEmpty();
  }

  @Test
  void anUnknownPolicyIsReportedRatherThanTheMissingBackends() {
    for (boolean print : new boolean[] {false, true}) {
      StringWriter err = new StringWriter();
      CommandLine cl = new CommandLine(new ServeCommand());
      cl.setErr(new PrintWriter(err));
      cl.setOut(new PrintWriter(new StringWriter()));
      int code = print ? cl.execute("--print-config", "--policy", "fastest") : cl.execute("--policy", "fastest");
      assertThat(code).as("print-config %s", print).isEqualTo(CommandLine.ExitCode.USAGE);
      assertThat(err.toString()).as("print-config %s", print)
          .contains("policy.name: fastest (expected: one of ")
          .doesNotContain("backends: none");
    }
  }

  @Test
  void kubernetesDiscoveryFlagsFillTheDiscoverySection() {
    ServeCommand cmd = new ServeCommand();
    new CommandLine(cmd).parseArgs("--discovery", "kubernetes", "--k8s-namespace", "llm", "--k8s-selector", "app=vllm",
        "--k8s-port", "8000", "--kubeconfig", "/tmp/kc", "--k8s-resync-period", "1m", "--k8s-start-timeout", "3s");
    KubernetesDiscoveryConfig k = cmd.resolve().discovery().kubernetes();
    assertThat(k).isEqualTo(new KubernetesDiscoveryConfig("llm", "app=vllm", "8000", "/tmp/kc",
        Duration.ofMinutes(1), Duration.ofSeconds(3)));
    assertThat(k.portNumber()).isEqualTo(8000);
  }

  @Test
  void discoveryKubernetesWithoutASelectorOrPortIsAUsageErrorNamingTheKey() {
    for (String[] args : List.of(new String[] {"--discovery", "kubernetes"},
        new String[] {"--discovery", "kubernetes", "--k8s-selector", "app=vllm"},
        new String[] {"--discovery", "dns"},
        new String[] {"--discovery", "none", "--k8s-selector", "app=vllm"})) {
      StringWriter err = new StringWriter();
      CommandLine cl = new CommandLine(new ServeCommand());
      cl.setErr(new PrintWriter(err));
      cl.setOut(new PrintWriter(new StringWriter()));
      assertThat(cl.execute(args)).as(String.join(" ", args)).isEqualTo(CommandLine.ExitCode.USAGE);
      assertThat(err.toString()).as(String.join(" ", args)).containsAnyOf(
          "discovery.kubernetes: none (expected: --k8s-selector and --k8s-port",
          "--k8s-selector app=vllm without --k8s-port (expected:", "--discovery: dns (expected: kubernetes or none)",
          "--discovery: none with --k8s-*");
    }
  }

  @Test
  void k8sSelectorWithoutK8sPortNamedTheYamlKeyAndNowNamesTheFlag(@TempDir Path dir) throws Exception {
    // serve takes static backends beside discovered ones (docs/kubernetes.md): the missing port is the mistake
    ServeCommand cmd = new ServeCommand();
    new CommandLine(cmd).parseArgs("--backend", "http://127.0.0.1:1", "--k8s-selector", "app=vllm");
    assertThatThrownBy(cmd::resolve).isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("--k8s-selector app=vllm without --k8s-port (expected: the engines' container port");
    // the port from the file is enough
    Path yaml = dir.resolve("kvroute.yaml");
    Files.writeString(yaml, "discovery:\n  kubernetes:\n    port: http\n");
    ServeCommand withFile = new ServeCommand();
    new CommandLine(withFile).parseArgs("--config", yaml.toString(), "--backend", "http://127.0.0.1:1",
        "--k8s-selector", "app=vllm");
    assertThat(withFile.resolve().discovery().kubernetes().port()).isEqualTo("http");
    assertThat(withFile.resolve().backends()).hasSize(1);
  }

  @Test
  void discoveryNoneDropsTheFilesSection(@TempDir Path dir) throws Exception {
    Path yaml = dir.resolve("kvroute.yaml");
    Files.writeString(yaml, "discovery:\n  kubernetes:\n    labelSelector: app=vllm\n    port: http\n");
    ServeCommand on = new ServeCommand();
    new CommandLine(on).parseArgs("--config", yaml.toString());
    assertThat(on.resolve().discovery().kubernetes().labelSelector()).isEqualTo("app=vllm");
    ServeCommand off = new ServeCommand();
    new CommandLine(off).parseArgs("--config", yaml.toString(), "--discovery", "none");
    assertThat(off.resolve().discovery().enabled()).isFalse();
  }

  @Test
  void anUnreachableApiServerIsOneLineAndANonZeroExit(@TempDir Path dir) throws Exception {
    int closedPort;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      closedPort = s.getLocalPort();
    }
    Path kubeconfig = dir.resolve("kubeconfig");
    Files.writeString(kubeconfig, "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:"
        + closedPort + "\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user: {}\n");
    StringWriter err = new StringWriter();
    CommandLine cl = new CommandLine(new ServeCommand());
    cl.setErr(new PrintWriter(err));
    cl.setOut(new PrintWriter(new StringWriter()));
    int code = cl.execute("--port", "0", "--admin-port", "-1", "--discovery", "kubernetes", "--k8s-selector", "app=vllm",
        "--k8s-port", "http", "--kubeconfig", kubeconfig.toString(), "--k8s-start-timeout", "3s");
    assertThat(code).isEqualTo(CommandLine.ExitCode.SOFTWARE);
    assertThat(err.toString().strip()).startsWith("kvroute serve: kubernetes discovery: cannot list pods app=vllm in namespace default at http://127.0.0.1:" + closedPort)
        .doesNotContain("\n");
  }

  @Test
  void noBackendIsAUsageError() {
    StringWriter err = new StringWriter();
    CommandLine cl = new CommandLine(new ServeCommand());
    cl.setErr(new PrintWriter(err));
    assertThat(cl.execute()).isEqualTo(CommandLine.ExitCode.USAGE);
    assertThat(err.toString()).contains("--mock-backends");
  }

  @Test
  void adminOnAllInterfacesWithoutATokenStartedAndNowRefusesToStart() {
    StringWriter err = new StringWriter();
    CommandLine cl = new CommandLine(new ServeCommand());
    cl.setErr(new PrintWriter(err));
    cl.setOut(new PrintWriter(new StringWriter()));
    assertThat(cl.execute("--mock-backends", "1", "--admin-bind", "0.0.0.0", "--admin-token", ""))
        .isEqualTo(CommandLine.ExitCode.USAGE);
    assertThat(err.toString()).contains("admin.token: none with the admin API on 0.0.0.0")
        .contains("--admin-insecure-no-token");
  }

  @Test
  void insecureFlagAndNewAdminAndApiSettingsAreReadFromFlags() {
    ServeCommand cmd = new ServeCommand();
    new CommandLine(cmd).parseArgs("--backend", "http://10.0.0.5:8000", "--admin-bind", "0.0.0.0", "--admin-token", "",
        "--admin-insecure-no-token", "--admin-max-body-bytes", "4096", "--admin-read-timeout", "2s",
        "--admin-idle-timeout", "5s", "--api-path", "default,/invocations");
    ProxyConfig c = cmd.resolve();
    assertThat(c.admin().openWithoutToken()).isTrue();
    assertThat(c.admin().maxBodyBytes()).isEqualTo(4096);
    assertThat(c.admin().readTimeout()).isEqualTo(Duration.ofSeconds(2));
    assertThat(c.admin().idleTimeout()).isEqualTo(Duration.ofSeconds(5));
    assertThat(c.api().allowedPaths()).containsExactly("default", "/invocations");
    assertThat(c.api().effectivePaths()).contains("/v1/chat/completions", "/invocations");
  }

  @Test
  void mockBackendsStartsTheBundledFleetAndTheProxyRoutesToIt() throws Exception {
    ServeCommand cmd = new ServeCommand();
    new CommandLine(cmd).parseArgs("--mock-backends", "2", "--port", "0", "--bind", "127.0.0.1", "--admin-port", "-1");
    ProxyConfig cfg = cmd.resolve();
    try (ServeCommand.Serving serving = ServeCommand.Serving.start(cfg, KvrouteServer.createCore(cfg))) {
      List<URI> engines = serving.mocks().urls();
      assertThat(engines).hasSize(2);
      assertThat(serving.server().config().mockBackends()).isZero();
      assertThat(serving.server().config().backends()).extracting(b -> b.url()).containsExactlyElementsOf(engines);
      HttpClient http = HttpClient.newHttpClient();
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(serving.server().uri().resolve("/v1/chat/completions"))
              .header("content-type", "application/json")
              .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"" + MockEngineOptions.DEFAULT_MODEL
                  + "\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":3}"))
              .build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(r.body()).contains("\"chat.completion\"");
      assertThat(r.headers().firstValue("x-kvroute-backend")).isPresent();
    }
  }
}
