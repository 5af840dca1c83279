package dev.kvroute.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.extension.TestWatcher;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.Network;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.images.builder.ImageFromDockerfile;
import org.testcontainers.lifecycle.Startables;

/**
 * The container image end to end: a router container in front of two mock-engine containers on one
 * Docker network, driven over HTTP from the test. It checks routing (the {@code x-kvroute-backend}
 * header, one session staying on one engine), streaming (SSE through the router), {@code /metrics}
 * (the router's {@code kvroute_*} and the engines' {@code vllm:*}), the image's {@code HEALTHCHECK},
 * and a backend failure (one engine container stopped: requests still succeed on the other).
 *
 * <p>The image: the tag in {@code KVROUTE_IT_IMAGE} if set (pre-built); otherwise it is built here
 * from the repository's {@code Dockerfile} and {@code kvroute-app/target/kvroute.jar} (written by {@code
 * package}, which runs before failsafe), on the base image {@code KVROUTE_JRE_IMAGE}, else {@code
 * kvroute-jre:local} when that exists locally ({@code docker/jre-base/build.sh}), else the
 * Dockerfile's default Temurin JRE.
 *
 * <p>Docker: where none is reachable the test is skipped with a message, except when {@code CI=true},
 * where it fails. Where no registry is reachable, run it with {@code TESTCONTAINERS_RYUK_DISABLED=true}
 * (Testcontainers' reaper is an image pulled from Docker Hub); {@code .ci/run} exports that.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ContainerStackIT {

  private static final int ENGINE_PORT = 8000;
  private static final int ROUTER_PORT = 8080;
  private static final String MODEL = "kvroute/mock-llm";
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Duration START_TIMEOUT = Duration.ofSeconds(90);

  private static Network network;
  private static GenericContainer<?> engineA;
  private static GenericContainer<?> engineB;
  private static GenericContainer<?> router;
  private static final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  private static volatile boolean failed;
  private static String failoverUser;

  @RegisterExtension
  static final TestWatcher dumpLogsOnFailure =
      new TestWatcher() {
        @Override
        public void testFailed(ExtensionContext context, Throwable cause) {
          failed = true;
        }
      };

  @BeforeAll
  static void startStack() {
    requireDocker();
    String image = image();
    System.out.println("ContainerStackIT: image " + image);
    network = Network.newNetwork();
    engineA = engine(image, "engine-a");
    engineB = engine(image, "engine-b");
    Startables.deepStart(engineA, engineB).join();
    router =
        new GenericContainer<>(image)
            .withNetwork(network)
            .withNetworkAliases("router")
            .withCommand(
                "serve",
                "--bind=0.0.0.0",
                "--port=" + ROUTER_PORT,
                "--admin-port=-1",
                "--policy=cache-aware",
                "--backend=http://engine-a:" + ENGINE_PORT,
                "--backend=http://engine-b:" + ENGINE_PORT)
            .withEnv("KVROUTE_HEALTH_URL", "http://127.0.0.1:" + ROUTER_PORT + "/health")
            .withExposedPorts(ROUTER_PORT)
            // The image's own HEALTHCHECK (java healthcheck command) must report healthy.
            .waitingFor(Wait.forHealthcheck().withStartupTimeout(START_TIMEOUT));
    try {
      router.start();
    } catch (RuntimeException e) {
      failed = true;
      printLogs();
      throw e;
    }
  }

  @AfterAll
  static void stopStack() {
    if (failed) {
      printLogs();
    }
    Stream.of(router, engineA, engineB).filter(c -> c != null).forEach(GenericContainer::stop);
    if (network != null) {
      network.close();
    }
  }

  /** About 90 words of context after each session's own opening words. */
  private static final String PROJECT_BRIEF = "The plan: migrate the billing service to the new cluster in"
      + " three phases over six weeks. Phase one moves read traffic behind a flag and compares answers with"
      + " the old service; phase two moves writes for internal accounts only, with a nightly reconciliation"
      + " job that reports every difference; phase three moves every account, keeps the old service as a"
      + " hot standby for two weeks, then retires it. Owners: platform team for the cluster, payments team"
      + " for the service, finance for the reconciliation reports. Risks we know of: the exchange-rate cache,"
      + " the invoice numbering, and the weekend batch jobs.";

  @Test
  @Order(1)
  void routesEachSessionToOneBackendAndNamesIt() throws Exception {
    List<String> chosen = new ArrayList<>();
    for (int session = 0; session < 4; session++) {
      String user = "session-" + session;
      // longer than one of the approximate index's 64-token pages, as a real first turn with its
      // context is: the router credits a backend with whole pages, so a shorter one matches nothing
      String first = "Summarise the plan for project " + session + " in one line. " + PROJECT_BRIEF;
      HttpResponse<String> turn1 = chat(user, List.of(Map.of("role", "user", "content", first)), false);
      assertThat(turn1.statusCode()).as(turn1.body()).isEqualTo(200);
      String backend = backendOf(turn1);
      assertThat(backend).containsAnyOf("engine-a", "engine-b");

      JsonNode answer = JSON.readTree(turn1.body());
      String reply = answer.at("/choices/0/message/content").asText();
      assertThat(reply).isNotEmpty();
      HttpResponse<String> turn2 =
          chat(
              user,
              List.of(
                  Map.of("role", "user", "content", first),
                  Map.of("role", "assistant", "content", reply),
                  Map.of("role", "user", "content", "And the risks?")),
              false);
      assertThat(turn2.statusCode()).as(turn2.body()).isEqualTo(200);
      assertThat(backendOf(turn2)).as("second turn of %s", user).isEqualTo(backend);
      JsonNode usage = JSON.readTree(turn2.body()).get("usage");
      // The second turn resends the first: the engine that served it has its full blocks cached.
      assertThat(usage.at("/prompt_tokens_details/cached_tokens").asInt())
          .as("cached tokens of the second turn of %s: %s", user, usage)
          .isPositive();
      chosen.add(backend);
    }
    System.out.println("ContainerStackIT: sessions routed to " + chosen);
  }

  @Test
  @Order(2)
  void streamsServerSentEventsThroughTheRouter() throws Exception {
    HttpResponse<String> response =
        chat("stream-session", List.of(Map.of("role", "user", "content", "Count to five.")), true);

    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
    assertThat(response.headers().firstValue("content-type")).get().asString().startsWith("text/event-stream");
    assertThat(backendOf(response)).containsAnyOf("engine-a", "engine-b");
    List<String> events =
        response.body().lines().filter(line -> line.startsWith("data: ")).toList();
    assertThat(events).hasSizeGreaterThan(2);
    assertThat(events.get(0)).contains("\"role\":\"assistant\"");
    assertThat(events.get(events.size() - 1)).isEqualTo("data: [DONE]");
  }

  @Test
  @Order(3)
  void exportsRouterAndEngineMetrics() throws Exception {
    String routerMetrics = get(router, ROUTER_PORT, "/metrics");
    assertThat(routerMetrics).contains("kvroute_");
    assertThat(routerMetrics.lines().filter(l -> l.startsWith("kvroute_requests")).toList())
        .as("kvroute_requests* samples after the requests above")
        .isNotEmpty();

    long promptTokens = 0;
    for (GenericContainer<?> engine : List.of(engineA, engineB)) {
      String metrics = get(engine, ENGINE_PORT, "/metrics");
      assertThat(metrics)
          .contains("vllm:num_requests_running")
          .contains("vllm:num_requests_waiting")
          .contains("vllm:kv_cache_usage_perc")
          .contains("vllm:prefix_cache_hits_total")
          .contains("vllm:time_to_first_token_seconds_bucket");
      promptTokens += sampleSum(metrics, "vllm:prompt_tokens_total");
    }
    assertThat(promptTokens).as("prompt tokens counted by the engines").isPositive();
  }

  @Test
  @Order(4)
  void routerRunsOnANativeTransport() {
    // The base image must carry the glibc libraries Netty's native libraries link against (libdl,
    // librt); without them the router silently falls back to NIO. io_uring where the runtime's seccomp
    // profile allows it (Debian's docker.io does), else epoll (upstream Docker's default since 25).
    assertThat(router.getLogs()).as("router log").containsPattern("listening on \\S+ \\((epoll|io_uring)\\)");
  }

  @Test
  @Order(5)
  void survivesABackendContainerStopping() throws Exception {
    // A session whose history lives on engine-b (new sessions tie on load and are drawn at random).
    List<Map<String, String>> history = null;
    for (int i = 0; i < 24 && history == null; i++) {
      List<Map<String, String>> turn1 =
          List.of(Map.of("role", "user", "content", "Plan a trip, variant " + i + "."));
      HttpResponse<String> response = chat("failover-" + i, turn1, false);
      assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
      if (backendOf(response).contains("engine-b")) {
        String reply = JSON.readTree(response.body()).at("/choices/0/message/content").asText();
        history = new ArrayList<>(turn1);
        history.add(Map.of("role", "assistant", "content", reply));
        history.add(Map.of("role", "user", "content", "And the budget?"));
        failoverUser = "failover-" + i;
      }
    }
    assertThat(history).as("some session routed to engine-b").isNotNull();

    engineB.stop();

    HttpResponse<String> moved = chat(failoverUser, history, true);
    assertThat(moved.statusCode()).as(moved.body()).isEqualTo(200);
    assertThat(backendOf(moved)).as("the engine-b session after engine-b stopped").contains("engine-a");
    assertThat(moved.body()).contains("data: [DONE]");
    for (int i = 0; i < 6; i++) {
      HttpResponse<String> response =
          chat(
              "after-failure-" + i,
              List.of(Map.of("role", "user", "content", "Still there, request " + i + "?")),
              i % 2 == 0);
      assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
      assertThat(backendOf(response)).contains("engine-a");
    }
  }

  // ---------------------------------------------------------------------------------------------

  private static void printLogs() {
    for (GenericContainer<?> c : new GenericContainer<?>[] {router, engineA, engineB}) {
      if (c != null && c.getContainerId() != null) {
        try {
          System.out.println("---- logs of " + c.getNetworkAliases() + " ----\n" + c.getLogs());
        } catch (RuntimeException e) {
          System.out.println("---- no logs of " + c.getNetworkAliases() + ": " + e);
        }
      }
    }
  }

  private static GenericContainer<?> engine(String image, String alias) {
    return new GenericContainer<>(image)
        .withNetwork(network)
        .withNetworkAliases(alias)
        .withCommand(
            "mock-engine",
            "--host=0.0.0.0",
            "--port=" + ENGINE_PORT,
            "--model=" + MODEL,
            "--time-scale=20",
            "--enable-prompt-tokens-details")
        .withEnv("KVROUTE_HEALTH_URL", "http://127.0.0.1:" + ENGINE_PORT + "/health")
        .withExposedPorts(ENGINE_PORT)
        .waitingFor(Wait.forHttp("/health").forPort(ENGINE_PORT).withStartupTimeout(START_TIMEOUT));
  }

  private static void requireDocker() {
    String unreachable = dockerSocketMissing();
    if (unreachable == null) {
      try {
        if (DockerClientFactory.instance().isDockerAvailable()) {
          return;
        }
        unreachable = "Testcontainers found no working Docker environment";
      } catch (RuntimeException e) {
        unreachable = "Testcontainers found no working Docker environment (" + e.getMessage() + ")";
      }
    }
    String message = "ContainerStackIT needs Docker: " + unreachable;
    if ("true".equalsIgnoreCase(System.getenv("CI"))) {
      fail(message + "; CI=true, so this is a failure, not a skip");
    }
    System.out.println("SKIPPED: " + message);
    Assumptions.abort(message + "; skipped");
  }

  /**
   * Why Docker is plainly absent (no socket where DOCKER_HOST or the default points), or null when
   * it may be there. Testcontainers takes minutes to give up on a missing daemon; this takes none.
   */
  private static String dockerSocketMissing() {
    String host = System.getenv("DOCKER_HOST");
    Path socket;
    if (host == null || host.isBlank()) {
      if (Files.exists(Path.of(System.getProperty("user.home"), ".testcontainers.properties"))) {
        return null; // Testcontainers may be configured there (docker.host, Docker Desktop, Colima)
      }
      socket = Path.of("/var/run/docker.sock");
    } else if (host.startsWith("unix://")) {
      socket = Path.of(host.substring("unix://".length()));
    } else {
      return null; // tcp:// or npipe: let Testcontainers try
    }
    return Files.exists(socket) ? null : "no Docker socket at " + socket + " (DOCKER_HOST=" + host + ")";
  }

  private static String image() {
    String prebuilt = System.getenv("KVROUTE_IT_IMAGE");
    if (prebuilt != null && !prebuilt.isBlank()) {
      return prebuilt;
    }
    Path repo = repositoryRoot();
    Path jar = repo.resolve("kvroute-app/target/kvroute.jar");
    if (!Files.isRegularFile(jar)) {
      fail(jar + " is missing: run `mvn package` (mvn verify does) before this test");
    }
    String base = Optional.ofNullable(System.getenv("KVROUTE_JRE_IMAGE")).filter(s -> !s.isBlank())
        .orElseGet(() -> imageExists("kvroute-jre:local") ? "kvroute-jre:local" : null);
    ImageFromDockerfile build =
        new ImageFromDockerfile("kvroute:it", false)
            .withFileFromPath("Dockerfile", repo.resolve("Dockerfile"))
            .withFileFromPath("kvroute-app/target/kvroute.jar", jar);
    if (base != null) {
      build.withBuildArg("JRE_IMAGE", base);
    }
    System.out.println("ContainerStackIT: building kvroute:it on " + (base != null ? base : "the Dockerfile's default base"));
    return build.get();
  }

  private static boolean imageExists(String name) {
    try {
      DockerClientFactory.instance().client().inspectImageCmd(name).exec();
      return true;
    } catch (RuntimeException e) {
      return false;
    }
  }

  private static Path repositoryRoot() {
    Path dir = Path.of(System.getProperty("basedir", "")).toAbsolutePath();
    for (Path p = dir; p != null; p = p.getParent()) {
      if (Files.isRegularFile(p.resolve("Dockerfile")) && Files.isDirectory(p.resolve("bench"))) {
        return p;
      }
    }
    throw new IllegalStateException("no repository root with a Dockerfile above " + dir);
  }

  private static HttpResponse<String> chat(String user, List<Map<String, String>> messages, boolean stream)
      throws IOException, InterruptedException {
    ObjectNode body = JSON.createObjectNode();
    body.put("model", MODEL).put("user", user).put("max_tokens", 8).put("stream", stream);
    body.set("messages", JSON.valueToTree(messages));
    HttpRequest request =
        HttpRequest.newBuilder(url(router, ROUTER_PORT, "/v1/chat/completions"))
            .timeout(Duration.ofSeconds(30))
            .header("content-type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body)))
            .build();
    return http.send(request, HttpResponse.BodyHandlers.ofString());
  }

  private static String get(GenericContainer<?> container, int port, String path)
      throws IOException, InterruptedException {
    HttpResponse<String> response =
        http.send(
            HttpRequest.newBuilder(url(container, port, path)).timeout(Duration.ofSeconds(10)).build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(response.statusCode()).as("GET %s", path).isEqualTo(200);
    return response.body();
  }

  private static URI url(GenericContainer<?> container, int port, String path) {
    return URI.create("http://" + container.getHost() + ":" + container.getMappedPort(port) + path);
  }

  private static String backendOf(HttpResponse<String> response) {
    return response.headers().firstValue("x-kvroute-backend").orElseThrow(
        () -> new AssertionError("no x-kvroute-backend header in " + response.headers().map()));
  }

  /** Sum of every sample of one metric name in Prometheus text (all label sets). */
  private static long sampleSum(String metrics, String name) {
    return (long)
        metrics
            .lines()
            .filter(l -> l.startsWith(name + "{") || l.startsWith(name + " "))
            .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1)))
            .sum();
  }
}
