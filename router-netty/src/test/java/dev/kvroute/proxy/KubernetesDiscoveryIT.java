package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.kvroute.core.BackendId;
import dev.kvroute.proxy.config.DiscoveryConfig;
import dev.kvroute.proxy.config.KubernetesDiscoveryConfig;
import dev.kvroute.proxy.config.ProxyConfig;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.api.model.StatusBuilder;
import io.fabric8.kubernetes.api.model.WatchEvent;
import io.fabric8.kubernetes.client.server.mock.KubernetesMixedDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.fabric8.mockwebserver.ServerRequest;
import io.fabric8.mockwebserver.ServerResponse;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kubernetes discovery against fabric8's mock API server in CRUD mode: pods (IP 127.0.0.1, a container
 * port named {@code http} set to a {@link FakeBackend}'s port) are created, flipped ready and not
 * ready, deleted, and the API server itself is stopped and started again; the router reads the
 * cluster through a kubeconfig file, as {@code kvroute serve --kubeconfig} does.
 */
@ExtendWith(NettyLeakExtension.class)
final class KubernetesDiscoveryIT {
  static final String NS = "llm";
  private static final String STREAM_BODY = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":true}";
  private static final String BODY =
      "{\"messages\":[{\"role\":\"user\",\"content\":\"" + "the same long prompt ".repeat(40) + "\"}]}";

  @TempDir Path dir;
  private KubernetesMockServer server;
  private KubernetesClient client;
  private final List<FakeBackend> fakes = new ArrayList<>();
  private final HttpClient http = HttpClient.newHttpClient();

  @BeforeEach
  void startApiServer() {
    server = crudServer();
    server.start();
    client = server.createClient();
  }

  @AfterEach
  void stop() {
    client.close();
    server.shutdown();
    fakes.forEach(FakeBackend::close);
  }

  /** A mock API server in CRUD mode that also answers scripted expectations first. */
  private static KubernetesMockServer crudServer() {
    Map<ServerRequest, Queue<ServerResponse>> responses = new HashMap<>();
    return new KubernetesMockServer(new Context(), new MockWebServer(), responses,
        new KubernetesMixedDispatcher(responses), false);
  }

  private FakeBackend fake(String name) {
    FakeBackend f = new FakeBackend(name);
    fakes.add(f);
    return f;
  }

  /** A pod of the engine fleet (label app=vllm) whose port "http" is {@code backend}'s. */
  static Pod pod(String name, FakeBackend backend, boolean ready) {
    return new PodBuilder()
        .withNewMetadata().withName(name).withNamespace(NS).addToLabels("app", "vllm")
            .addToAnnotations(KubernetesDiscovery.CAPACITY_ANNOTATION, "4096")
            .addToAnnotations(KubernetesDiscovery.MODELS_ANNOTATION, backend.model).endMetadata()
        .withNewSpec().addNewContainer().withName("engine").withImage("vllm/vllm-openai")
            .addNewPort().withName("http").withContainerPort(backend.port()).endPort().endContainer().endSpec()
        .withNewStatus().withPodIP("127.0.0.1").withPhase("Running")
            .addNewCondition().withType("Ready").withStatus(ready ? "True" : "False").endCondition().endStatus()
        .build();
  }

  private void create(Pod pod) {
    client.pods().inNamespace(NS).resource(pod).create();
  }

  private void setReady(String name, boolean ready) {
    client.pods().inNamespace(NS).withName(name).editStatus(p -> new PodBuilder(p).editStatus()
        .withConditions(new io.fabric8.kubernetes.api.model.PodConditionBuilder()
            .withType("Ready").withStatus(ready ? "True" : "False").build())
        .endStatus().build());
  }

  private void delete(String name) {
    client.pods().inNamespace(NS).withName(name).delete();
  }

  /** A kubeconfig pointing at the mock API server. */
  private Path kubeconfig(int port) throws IOException {
    Path f = dir.resolve("kubeconfig-" + port);
    Files.writeString(f, """
        apiVersion: v1
        kind: Config
        clusters:
          - name: mock
            cluster:
              server: http://localhost:%d
        contexts:
          - name: mock
            context:
              cluster: mock
              user: mock
              namespace: %s
        current-context: mock
        users:
          - name: mock
            user:
              token: test-token
        """.formatted(port, NS));
    return f;
  }

  private KvrouteServer router(UnaryOperator<KubernetesDiscoveryConfig> tweak) throws IOException {
    KubernetesDiscoveryConfig k8s = tweak.apply(KubernetesDiscoveryConfig.of("", "app=vllm", "http")
        .withKubeconfig(kubeconfig(server.getPort()).toString()));
    ProxyConfig cfg = ProxyFailureIT.base("round-robin", List.of()).withDiscovery(new DiscoveryConfig(k8s));
    return KvrouteServer.start(cfg);
  }

  private static List<String> names(KvrouteServer router) {
    return router.backends().stream().map(BackendId::name).sorted().toList();
  }

  private String backendOf(KvrouteServer router) throws Exception {
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(router.uri().resolve("/v1/chat/completions"))
        .timeout(Duration.ofSeconds(20)).header("content-type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(BODY)).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return r.headers().firstValue("x-kvroute-backend").orElseThrow();
  }

  /** The backends {@code n} requests went to. */
  private Set<String> spread(KvrouteServer router, int n) throws Exception {
    Set<String> seen = new HashSet<>();
    for (int i = 0; i < n; i++) {
      seen.add(backendOf(router));
    }
    return seen;
  }

  private static String streamRequest(String fake) {
    return "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nx-fake: " + fake
        + "\r\nContent-Length: " + STREAM_BODY.length() + "\r\n\r\n" + STREAM_BODY;
  }

  @Test
  void readyPodsBecomeBackendsAndFollowScaleUpAndDown() throws Exception {
    FakeBackend a = fake("a");
    FakeBackend b = fake("b");
    FakeBackend c = fake("c");
    create(pod("vllm-a", a, true));
    create(pod("vllm-b", b, true));
    create(pod("vllm-starting", c, false));
    try (KvrouteServer router = router(k -> k)) {
      assertThat(router.kubernetesDiscovery().namespace()).as("the kubeconfig context's namespace").isEqualTo(NS);
      assertThat(names(router)).as("registered before start returns; a not-ready pod is not a backend")
          .containsExactly("vllm-a", "vllm-b");
      assertThat(routerBackend(router, "vllm-a").capacityTokens()).as("the annotation").isEqualTo(4096);
      assertThat(routerBackend(router, "vllm-a").config().models()).as("the annotation").containsExactly("fake-model");
      assertThat(spread(router, 4)).containsExactlyInAnyOrder("vllm-a", "vllm-b");
      // round-robin leaves the index alone: a prompt in vllm-a's view, which must leave with the pod
      router.core().index().insert(BackendId.of("vllm-a"), java.util.stream.IntStream.range(0, 64).toArray());
      assertThat(router.core().index().sizeTokens(BackendId.of("vllm-a"))).isPositive();

      setReady("vllm-starting", true);
      await().atMost(10, TimeUnit.SECONDS).until(() -> names(router).contains("vllm-starting"));
      assertThat(spread(router, 6)).containsExactlyInAnyOrder("vllm-a", "vllm-b", "vllm-starting");

      delete("vllm-a");
      delete("vllm-starting");
      await().atMost(10, TimeUnit.SECONDS).until(() -> names(router).equals(List.of("vllm-b")));
      assertThat(router.core().index().sizeTokens(BackendId.of("vllm-a"))).as("its index view left with it").isZero();
      assertThat(spread(router, 3)).containsExactly("vllm-b");
    }
  }

  @Test
  void aPodThatTurnsNotReadyDrainsItsStreamAndTakesRequestsWhenReadyAgain() throws Exception {
    FakeBackend a = fake("a");
    create(pod("vllm-a", a, true));
    try (KvrouteServer router = router(k -> k);
        RawHttp streaming = new RawHttp(router.port())) {
      streaming.send(streamRequest("events=20;interval-ms=50"));
      await().atMost(10, TimeUnit.SECONDS).until(() -> a.received.size() == 1);
      FakeBackend b = fake("b");
      create(pod("vllm-b", b, true));
      await().atMost(10, TimeUnit.SECONDS).until(() -> names(router).size() == 2);

      setReady("vllm-a", false);
      await().atMost(10, TimeUnit.SECONDS).until(() -> router.kubernetesDiscovery() != null
          && routerBackend(router, "vllm-a").draining());
      assertThat(names(router)).as("draining, not removed").containsExactly("vllm-a", "vllm-b");
      assertThat(spread(router, 4)).as("no new request to the draining pod").containsExactly("vllm-b");

      RawHttp.Response r = streaming.read();
      assertThat(r.status()).isEqualTo(200);
      assertThat(r.header("x-kvroute-backend")).isEqualTo("vllm-a");
      assertThat(r.bodyText()).contains("[DONE]");
      assertThat(a.completedStreams).hasValue(1);
      assertThat(a.abortedStreams).hasValue(0);

      setReady("vllm-a", true);
      await().atMost(10, TimeUnit.SECONDS).until(() -> !routerBackend(router, "vllm-a").draining());
      assertThat(spread(router, 4)).containsExactlyInAnyOrder("vllm-a", "vllm-b");
    }
  }

  private static Backend routerBackend(KvrouteServer router, String name) {
    return router.context().backends().get(BackendId.of(name));
  }

  @Test
  void aPodDeletedWhileItsStreamIsInFlightFinishesTheStream() throws Exception {
    FakeBackend a = fake("a");
    FakeBackend b = fake("b");
    create(pod("vllm-a", a, true));
    try (KvrouteServer router = router(k -> k);
        RawHttp s1 = new RawHttp(router.port());
        RawHttp s2 = new RawHttp(router.port())) {
      s1.send(streamRequest("events=20;interval-ms=50"));
      s2.send(streamRequest("events=20;interval-ms=50"));
      await().atMost(10, TimeUnit.SECONDS).until(() -> a.received.size() == 2);
      create(pod("vllm-b", b, true));
      delete("vllm-a");
      await().atMost(10, TimeUnit.SECONDS).until(() -> names(router).equals(List.of("vllm-b")));
      assertThat(spread(router, 2)).containsExactly("vllm-b");
      for (RawHttp s : List.of(s1, s2)) {
        RawHttp.Response r = s.read();
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.bodyText()).contains("[DONE]");
      }
      assertThat(a.completedStreams).as("none lost").hasValue(2);
      assertThat(a.abortedStreams).hasValue(0);
    }
  }

  @Test
  void aDroppedWatchKeepsTheLastFleetAndResynchronizesWhenTheApiServerIsBack() throws Exception {
    FakeBackend a = fake("a");
    FakeBackend b = fake("b");
    FakeBackend c = fake("c");
    create(pod("vllm-a", a, true));
    create(pod("vllm-b", b, true));
    int port = server.getPort();
    List<String> warnings = new java.util.concurrent.CopyOnWriteArrayList<>();
    Logger log = Logger.getLogger(KubernetesDiscovery.class.getName());
    Handler capture = new Handler() {
      @Override
      public void publish(LogRecord r) {
        if (r.getLevel() == java.util.logging.Level.WARNING) {
          warnings.add(r.getMessage());
        }
      }

      @Override
      public void flush() {}

      @Override
      public void close() {}
    };
    log.addHandler(capture);
    try (KvrouteServer router = router(k -> k)) {
      assertThat(names(router)).containsExactly("vllm-a", "vllm-b");
      await().atMost(10, TimeUnit.SECONDS).until(() -> router.kubernetesDiscovery().watching());

      // the API server goes away (its pods with it: the new one starts from an empty store)
      String lastVersion = client.pods().inNamespace(NS).list().getMetadata().getResourceVersion();
      client.close();
      server.shutdown();
      await().atMost(20, TimeUnit.SECONDS).until(() -> router.kubernetesDiscovery().outage());
      assertThat(warnings).as("one line per outage").hasSize(1);
      assertThat(warnings.get(0)).contains("keeping the last known backends");
      assertThat(names(router)).as("the last known fleet stays").containsExactly("vllm-a", "vllm-b");
      assertThat(spread(router, 4)).containsExactlyInAnyOrder("vllm-a", "vllm-b");

      // while it was down, vllm-a was deleted and vllm-c started
      server = crudServer();
      // as a real API server does for a resource version it no longer has (etcd compacted or
      // restored), the first watch from the old version is answered 410 Gone: the informer relists.
      // (The mock server accepts any version by itself, so it says so through this expectation.)
      server.expect().get()
          .withPath("/api/v1/namespaces/" + NS + "/pods?allowWatchBookmarks=true&labelSelector=app%3Dvllm&resourceVersion="
              + lastVersion + "&timeoutSeconds=600&watch=true")
          .andUpgradeToWebSocket().open()
          .immediately().andEmit(new WatchEvent(new StatusBuilder().withStatus("Failure").withCode(410)
              .withReason("Expired").withMessage("too old resource version: " + lastVersion).build(), "ERROR"))
          .done().once();
      server.start(port);
      client = server.createClient();
      create(pod("vllm-b", b, true));
      create(pod("vllm-c", c, true));

      await().atMost(30, TimeUnit.SECONDS).until(() -> names(router).equals(List.of("vllm-b", "vllm-c")));
      await().atMost(10, TimeUnit.SECONDS).until(() -> !router.kubernetesDiscovery().outage());
      assertThat(warnings).hasSize(1);
      assertThat(spread(router, 4)).containsExactlyInAnyOrder("vllm-b", "vllm-c");
    } finally {
      log.removeHandler(capture);
    }
  }

  @Test
  void anUnreachableApiServerFailsTheStartWithOneLine() throws Exception {
    int closedPort;
    try (ServerSocket s = new ServerSocket(0)) {
      closedPort = s.getLocalPort();
    }
    Path config = kubeconfig(closedPort);
    ProxyConfig cfg = ProxyFailureIT.base("round-robin", List.of()).withDiscovery(new DiscoveryConfig(
        KubernetesDiscoveryConfig.of(NS, "app=vllm", "8000").withKubeconfig(config.toString())
            .withStartTimeout(Duration.ofSeconds(3))));
    assertThatThrownBy(() -> KvrouteServer.start(cfg))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageStartingWith("kubernetes discovery: cannot list pods app=vllm in namespace llm at http://localhost:" + closedPort)
        .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
  }

  @Test
  void aPodWhosePortIsMissingOrAddressTakenIsSkippedAndStaticBackendsStay() throws Exception {
    FakeBackend a = fake("a");
    FakeBackend statics = fake("static");
    Pod noPort = new PodBuilder(pod("vllm-noport", a, true)).editSpec().editFirstContainer()
        .withPorts(List.of()).endContainer().endSpec().build();
    create(noPort);
    create(pod("vllm-dup", statics, true));
    KubernetesDiscoveryConfig k8s = KubernetesDiscoveryConfig.of("", "app=vllm", "http")
        .withKubeconfig(kubeconfig(server.getPort()).toString());
    ProxyConfig cfg = ProxyFailureIT.base("round-robin", List.of(statics.uri())).withDiscovery(new DiscoveryConfig(k8s));
    try (KvrouteServer router = KvrouteServer.start(cfg)) {
      String staticName = "127.0.0.1:" + statics.port();
      assertThat(names(router)).as("no port: skipped; same address as a static backend: skipped")
          .containsExactly(staticName);
      create(pod("vllm-a", a, true));
      await().atMost(10, TimeUnit.SECONDS).until(() -> names(router).size() == 2);
      delete("vllm-dup");
      delete("vllm-a");
      await().atMost(10, TimeUnit.SECONDS).until(() -> names(router).size() == 1);
      assertThat(names(router)).as("discovery removes only what it added").containsExactly(staticName);
    }
  }
}
