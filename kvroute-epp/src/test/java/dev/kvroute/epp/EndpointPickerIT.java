package dev.kvroute.epp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.Value;
import dev.kvroute.core.BackendId;
import dev.kvroute.core.load.BackendLoad;
import dev.kvroute.engine.model.CostModel;
import dev.kvroute.engine.model.EngineConfig;
import dev.kvroute.engine.server.MockEngineFleet;
import dev.kvroute.engine.server.MockEngineOptions;
import dev.kvroute.proxy.EndpointPicker;
import dev.kvroute.proxy.config.AdmissionConfig;
import dev.kvroute.proxy.config.HealthCheckConfig;
import dev.kvroute.proxy.config.ProxyConfig;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * kvroute as a GAIE endpoint picker, driven by a test client playing Envoy's side of ext_proc
 * (FULL_DUPLEX_STREAMED) in front of three real mock engines. The tests named after a point of GAIE's
 * endpoint-picker protocol document ({@code docs/proposals/004-endpoint-picker-protocol}) check that
 * point; the others check kvroute's decisions, usage and leases through the protocol.
 */
final class EndpointPickerIT {
  static final ObjectMapper JSON = new ObjectMapper();
  static final String MODEL = MockEngineOptions.DEFAULT_MODEL;

  static MockEngineFleet engines;
  static EndpointPicker picker;
  static ExtProcService service;
  static Server server;
  static ManagedChannel channel;
  static FakeEnvoy envoy;

  static MockEngineOptions options() {
    return MockEngineOptions.builder()
        .host("127.0.0.1")
        .port(0)
        .engine(EngineConfig.builder().cost(CostModel.linear(10_000, 0.020, 100)).kvCapacityTokens(200_000).build())
        .timeScale(10)
        .enablePromptTokensDetails(true)
        .seed(7)
        .build();
  }

  static ProxyConfig config(List<String> urls) {
    return ProxyConfig.defaults()
        .withPort(0)
        .withAdminPort(-1)
        .withPolicy("cache-aware")
        .withHealthCheck(new HealthCheckConfig(true, "/health", Duration.ofMillis(500), Duration.ofSeconds(2), 2, 1, Duration.ZERO))
        .withBackendUrls(urls.stream().map(URI::create).toList());
  }

  @BeforeAll
  static void start() throws IOException {
    engines = MockEngineFleet.start(options(), 3);
    picker = EndpointPicker.start(config(engines.urls()), 2);
    service = new ExtProcService(picker, 1 << 20);
    String name = "epp-" + System.nanoTime();
    server = InProcessServerBuilder.forName(name).addService(service).build().start();
    channel = InProcessChannelBuilder.forName(name).build();
    envoy = new FakeEnvoy(channel);
    await().atMost(Duration.ofSeconds(20)).until(() -> picker.routableEndpoints().size() == 3);
  }

  @AfterAll
  static void stop() throws InterruptedException {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    picker.close();
    engines.close();
  }

  /** Every test leaves no lease and no stream behind. */
  @AfterEach
  void noLeaseLeft() {
    assertNoLeaseLeft(picker, service);
  }

  static void assertNoLeaseLeft(EndpointPicker p, ExtProcService s) {
    await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
      assertThat(s.openStreams()).as("open ext_proc streams").isZero();
      for (String e : p.endpoints()) {
        BackendLoad l = p.core().loads().load(BackendId.of(e));
        assertThat(l.inFlightRequests()).as("in flight on %s", e).isZero();
        assertThat(l.prefillingRequests()).as("prefilling on %s", e).isZero();
        assertThat(l.inFlightPrefillTokens()).as("prefill tokens on %s", e).isZero();
      }
    });
  }

  static String chat(List<String[]> messages, int maxTokens, boolean stream) {
    ObjectNode body = JSON.createObjectNode();
    body.put("model", MODEL);
    ArrayNode ms = body.putArray("messages");
    for (String[] m : messages) {
      ms.addObject().put("role", m[0]).put("content", m[1]);
    }
    body.put("max_tokens", maxTokens);
    body.put("ignore_eos", true);
    if (stream) {
      body.put("stream", true);
      body.putObject("stream_options").put("include_usage", true);
    }
    return body.toString();
  }

  static String words(String seed, int n) {
    StringBuilder s = new StringBuilder();
    for (int i = 0; i < n; i++) {
      s.append(' ').append(seed).append(i % 97).append(" word");
    }
    return s.toString();
  }

  static JsonNode usage(FakeEnvoy.Result r) throws IOException {
    String text = r.text();
    if (text.startsWith("data:")) {
      JsonNode last = null;
      for (String e : text.split("\n\n")) {
        if (e.startsWith("data: {")) {
          JsonNode j = JSON.readTree(e.substring(6));
          if (j.has("usage") && !j.get("usage").isNull()) {
            last = j.get("usage");
          }
        }
      }
      return last;
    }
    return JSON.readTree(text).get("usage");
  }

  static BackendLoad load(String endpoint) {
    return picker.core().loads().load(BackendId.of(endpoint));
  }

  // ---- the protocol document, point by point ----

  /** "The EPP MUST implement the Envoy external processing service ... MUST support streaming mode." */
  @Test
  void extProc_streamingMode_headersThenBodyInChunks_answeredInOrder() throws Exception {
    String body = chat(List.<String[]>of(new String[] {"user", "hello" + words("a", 400)}), 4, false);
    FakeEnvoy.Exchange x = envoy.open();
    x.requestHeaders("/v1/chat/completions", Map.of(), null, false);
    x.requestBodyInChunks(body.getBytes(StandardCharsets.UTF_8), 5);
    FakeEnvoy.Route route = x.route();
    assertThat(route.clearRouteCache()).isTrue();
    assertThat(new String(route.body(), StandardCharsets.UTF_8)).isEqualTo(body);
    assertThat(picker.routableEndpoints()).contains(route.endpoints().get(0));
    x.cancel();
  }

  /** "Destination Endpoint": the header and the envoy.lb metadata, never different. */
  @Test
  void destinationEndpoint_headerAndEnvoyLbMetadataCarryTheSameValue() throws Exception {
    FakeEnvoy.Result r = envoy.forward("/v1/chat/completions",
        chat(List.<String[]>of(new String[] {"user", "same value" + words("b", 50)}), 3, false), Map.of(), 3, null);
    assertThat(r.route().destinationHeader()).isNotBlank().isEqualTo(r.route().destinationMetadata());
    assertThat(r.status()).isEqualTo(200);
  }

  /** "... multiple endpoints in <ip:port>,<ip:port>,... format": the pick first, then distinct fallbacks. */
  @Test
  void destinationEndpoint_fallbacksAreCommaSeparated_pickFirst() throws Exception {
    FakeEnvoy.Exchange x = envoy.open();
    x.requestHeaders("/v1/completions", Map.of(), null, false);
    x.requestBodyInChunks(("{\"model\":\"" + MODEL + "\",\"prompt\":\"fallbacks" + words("c", 30) + "\",\"max_tokens\":2}")
        .getBytes(StandardCharsets.UTF_8), 2);
    FakeEnvoy.Route route = x.route();
    List<String> eps = route.endpoints();
    assertThat(eps).hasSize(3).doesNotHaveDuplicates();
    assertThat(Set.copyOf(eps)).isEqualTo(Set.copyOf(picker.routableEndpoints()));
    for (String e : eps) {
      assertThat(e).matches("127\\.0\\.0\\.1:\\d+");
    }
    // the lease is on the first: the policy's choice
    assertThat(load(eps.get(0)).inFlightRequests()).isEqualTo(1);
    x.cancel();
  }

  /** "Endpoint Subset": the EPP MUST only select endpoints from the specified list. */
  @Test
  void endpointSubset_picksOnlyFromTheList() throws Exception {
    String only = picker.routableEndpoints().get(1);
    for (int i = 0; i < 4; i++) {
      FakeEnvoy.Result r = envoy.forward("/v1/chat/completions",
          chat(List.<String[]>of(new String[] {"user", "subset " + i + words("d" + i, 40)}), 2, false), Map.of(), 2, List.of(only));
      assertThat(r.route().endpoints()).containsExactly(only);
      assertThat(r.status()).isEqualTo(200);
    }
    // the comma-separated string form, as header-to-metadata filters write it
    String two = picker.routableEndpoints().get(0) + "," + picker.routableEndpoints().get(2);
    FakeEnvoy.Exchange x = envoy.open();
    x.requestHeadersWithMetadata("/v1/completions", FakeEnvoy.Exchange.subsetMetadata(Value.newBuilder().setStringValue(two).build()));
    x.requestBodyInChunks(("{\"model\":\"" + MODEL + "\",\"prompt\":\"x\",\"max_tokens\":1}").getBytes(StandardCharsets.UTF_8), 1);
    assertThat(x.route().endpoints()).containsExactlyInAnyOrder(two.split(","));
    x.cancel();
  }

  /** "Endpoint Subset": none of the listed endpoints is eligible → ImmediateResponse 503. */
  @Test
  void endpointSubset_noEligibleEndpointIs503() throws Exception {
    assertImmediate(List.of("10.9.9.9:8000"), 503);
  }

  /** "Endpoint Subset": the list is empty → ImmediateResponse 503. */
  @Test
  void endpointSubset_emptyListIs503() throws Exception {
    assertImmediate(List.of(), 503);
  }

  /** "If the key ... is not set, then the EPP MUST select from the set defined by the InferencePool selector." */
  @Test
  void endpointSubset_unsetSelectsFromThePool() throws Exception {
    Set<String> seen = new HashSet<>();
    for (int i = 0; i < 9; i++) {
      FakeEnvoy.Exchange x = envoy.open();
      x.requestHeaders("/v1/completions", Map.of(), null, false);
      x.requestBodyInChunks(("{\"model\":\"" + MODEL + "\",\"prompt\":\"pool " + i + words("e" + i, 20) + "\",\"max_tokens\":1}")
          .getBytes(StandardCharsets.UTF_8), 2);
      String ep = x.route().endpoints().get(0);
      assertThat(picker.routableEndpoints()).contains(ep);
      seen.add(ep);
      x.cancel();
    }
    assertThat(seen).hasSizeGreaterThan(1); // distinct prompts spread over the pool
  }

  private static ProcessingResponse assertImmediate(List<String> subset, int status) throws Exception {
    FakeEnvoy.Exchange x = envoy.open();
    x.requestHeaders("/v1/chat/completions", Map.of(), subset, false);
    x.requestBodyInChunks(chat(List.<String[]>of(new String[] {"user", "hi"}), 1, false).getBytes(StandardCharsets.UTF_8), 2);
    ProcessingResponse r = x.next();
    assertThat(r.hasImmediateResponse()).as("immediate response: %s", r).isTrue();
    assertThat(r.getImmediateResponse().getStatus().getCodeValue()).isEqualTo(status);
    JsonNode err = JSON.readTree(r.getImmediateResponse().getBody().toStringUtf8()).get("error");
    assertThat(err.get("message").asText()).isNotBlank();
    x.complete();
    return r;
  }

  /** "Destination Endpoint" constraints: 503 if there are no ready endpoints. */
  @Test
  void destinationEndpoint_noReadyEndpointsIs503() throws Exception {
    try (EndpointPicker empty = EndpointPicker.start(config(List.of()), 2)) {
      ExtProcService s = new ExtProcService(empty, 1 << 20);
      String name = "empty-" + System.nanoTime();
      Server srv = InProcessServerBuilder.forName(name).addService(s).build().start();
      ManagedChannel ch = InProcessChannelBuilder.forName(name).build();
      try {
        FakeEnvoy.Exchange x = new FakeEnvoy(ch).open();
        x.requestHeaders("/v1/chat/completions", Map.of(), null, false);
        x.requestBodyInChunks(chat(List.<String[]>of(new String[] {"user", "anyone?"}), 1, false).getBytes(StandardCharsets.UTF_8), 2);
        ProcessingResponse r = x.next();
        assertThat(r.getImmediateResponse().getStatus().getCodeValue()).isEqualTo(503);
        assertThat(r.getImmediateResponse().getHeaders().getSetHeadersList())
            .anyMatch(h -> h.getHeader().getKey().equals("retry-after"));
        x.complete();
        await().atMost(Duration.ofSeconds(5)).until(() -> s.openStreams() == 0);
      } finally {
        ch.shutdownNow();
        srv.shutdownNow();
      }
    }
  }

  /** "Destination Endpoint" constraints: 429 if the request should be dropped (sheddable, servers saturated). */
  @Test
  void destinationEndpoint_droppedRequestIs429() throws Exception {
    ProxyConfig cfg = config(engines.urls().subList(0, 1))
        .withAdmission(AdmissionConfig.defaults().withEnabled(true).withMaxConcurrencyPerBackend(1));
    try (EndpointPicker p = EndpointPicker.start(cfg, 0)) {
      await().atMost(Duration.ofSeconds(20)).until(() -> p.routableEndpoints().size() == 1);
      ExtProcService s = new ExtProcService(p, 1 << 20);
      String name = "shed-" + System.nanoTime();
      Server srv = InProcessServerBuilder.forName(name).addService(s).build().start();
      ManagedChannel ch = InProcessChannelBuilder.forName(name).build();
      try {
        FakeEnvoy e = new FakeEnvoy(ch);
        FakeEnvoy.Exchange busy = e.open(); // one request in flight fills the only backend's one slot
        busy.requestHeaders("/v1/chat/completions", Map.of(), null, false);
        busy.requestBodyInChunks(chat(List.<String[]>of(new String[] {"user", "first"}), 1, false).getBytes(StandardCharsets.UTF_8), 1);
        busy.route();

        FakeEnvoy.Exchange shed = e.open();
        shed.requestHeaders("/v1/chat/completions", Map.of("x-kvroute-priority", "-1"), null, false);
        shed.requestBodyInChunks(chat(List.<String[]>of(new String[] {"user", "sheddable"}), 1, false).getBytes(StandardCharsets.UTF_8), 2);
        ProcessingResponse r = shed.next();
        assertThat(r.getImmediateResponse().getStatus().getCodeValue()).isEqualTo(429);
        assertThat(JSON.readTree(r.getImmediateResponse().getBody().toStringUtf8()).at("/error/code").asText())
            .isEqualTo("rate_limit_exceeded");
        shed.complete();

        // a request that is not sheddable still gets an endpoint (the engine queues it)
        FakeEnvoy.Exchange critical = e.open();
        critical.requestHeaders("/v1/chat/completions", Map.of(), null, false);
        critical.requestBodyInChunks(chat(List.<String[]>of(new String[] {"user", "critical"}), 1, false).getBytes(StandardCharsets.UTF_8), 2);
        assertThat(critical.route().endpoints()).containsExactly(p.routableEndpoints().get(0));
        critical.cancel();
        busy.cancel();
        assertNoLeaseLeft(p, s);
      } finally {
        ch.shutdownNow();
        srv.shutdownNow();
      }
    }
  }

  /**
   * "Destination Endpoint Served": the data plane reports the endpoint that served the request; when
   * it is a fallback, kvroute moves the lease (and the prompt's pages) there.
   */
  @Test
  void destinationEndpointServed_fallbackServedMovesTheLease() throws Exception {
    FakeEnvoy.Exchange x = envoy.open();
    x.requestHeaders("/v1/completions", Map.of(), null, false);
    x.requestBodyInChunks(("{\"model\":\"" + MODEL + "\",\"prompt\":\"served elsewhere" + words("f", 60) + "\",\"max_tokens\":2}")
        .getBytes(StandardCharsets.UTF_8), 3);
    List<String> eps = x.route().endpoints();
    String primary = eps.get(0);
    String fallback = eps.get(1);
    assertThat(load(primary).inFlightRequests()).isEqualTo(1);
    x.responseHeaders(200, "application/json", fallback, false);
    assertThat(load(primary).inFlightRequests()).isZero();
    assertThat(load(fallback).inFlightRequests()).isEqualTo(1);
    x.responseBody("{\"usage\":{\"prompt_tokens\":70,\"completion_tokens\":2}}".getBytes(StandardCharsets.UTF_8), true);
    assertThat(load(fallback).inFlightRequests()).isZero();
    x.complete();
  }

  /** "Health Checking": liveness, readiness and the ext_proc service over the gRPC health protocol. */
  @Test
  void healthChecking_livenessReadinessAndExtProcServices() throws Exception {
    try (EppServer epp = EppServer.start(config(engines.urls()).withPort(0), 0, 0, 1)) {
      ManagedChannel ch = NettyChannelBuilder.forAddress("127.0.0.1", epp.grpcPort()).usePlaintext().build();
      try {
        java.util.function.Function<String, ServingStatus> h = service -> HealthGrpc.newBlockingStub(ch)
            .withDeadlineAfter(30, TimeUnit.SECONDS).check(HealthCheckRequest.newBuilder().setService(service).build()).getStatus();
        for (String s : List.of(Gaie.LIVENESS, Gaie.READINESS, Gaie.EXT_PROC_SERVICE)) {
          assertThat(h.apply(s)).as(s).isEqualTo(ServingStatus.SERVING);
        }
        // the ext_proc service on the same port, over a real socket
        await().atMost(Duration.ofSeconds(20)).until(() -> epp.picker().routableEndpoints().size() == 3);
        FakeEnvoy.Result r = new FakeEnvoy(ch).forward("/v1/chat/completions",
            chat(List.<String[]>of(new String[] {"user", "over tcp" + words("g", 20)}), 2, true), Map.of(), 2, null);
        assertThat(r.status()).isEqualTo(200);
        assertThat(epp.picker().scrapeMetrics()).contains("kvroute_requests_total");
        epp.notReady();
        assertThat(h.apply(Gaie.READINESS))
            .isEqualTo(ServingStatus.NOT_SERVING);
        assertThat(h.apply(Gaie.EXT_PROC_SERVICE))
            .isEqualTo(ServingStatus.NOT_SERVING);
        assertThat(h.apply(Gaie.LIVENESS))
            .isEqualTo(ServingStatus.SERVING);
        assertNoLeaseLeft(epp.picker(), epp.service());
      } finally {
        ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
    }
  }

  // ---- kvroute's decisions through the protocol ----

  @Test
  void chat_cacheAwareAffinityAcrossTurnsOfOneSession() throws Exception {
    List<String[]> history = new ArrayList<>();
    history.add(new String[] {"system", "You are a careful assistant." + words("sys", 300)});
    String first = null;
    for (int turn = 0; turn < 4; turn++) {
      history.add(new String[] {"user", "question " + turn + words("q" + turn, 40)});
      FakeEnvoy.Result r = envoy.forward("/v1/chat/completions", chat(history, 8, false),
          Map.of("x-session-id", "session-1"), 4, null);
      assertThat(r.status()).isEqualTo(200);
      JsonNode j = JSON.readTree(r.text());
      history.add(new String[] {"assistant", j.at("/choices/0/message/content").asText()});
      String ep = r.route().endpoints().get(0);
      JsonNode usage = j.get("usage");
      if (turn == 0) {
        first = ep;
      } else {
        assertThat(ep).as("turn %d stays where its prefix is cached", turn).isEqualTo(first);
        assertThat(usage.at("/prompt_tokens_details/cached_tokens").asInt()).as("engine-reported cached tokens").isPositive();
      }
      assertThat(r.echoedBody()).isEqualTo(r.upstreamBody());
    }
  }

  @Test
  void chat_streaming_usageAndEchoedChunks() throws Exception {
    FakeEnvoy.Result r = envoy.forward("/v1/chat/completions",
        chat(List.<String[]>of(new String[] {"user", "stream me" + words("h", 80)}), 12, true), Map.of(), 3, null);
    assertThat(r.status()).isEqualTo(200);
    assertThat(r.text()).startsWith("data: ").contains("[DONE]");
    assertThat(r.echoedBody()).isEqualTo(r.upstreamBody());
    assertThat(usage(r).get("completion_tokens").asInt()).isEqualTo(12);
    assertThat(picker.scrapeMetrics()).contains("kvroute_ttft_seconds");
  }

  @Test
  void completions_secondRequestWithSamePrefixMatchesTheIndex() throws Exception {
    String prefix = "A long shared document." + words("doc", 300);
    FakeEnvoy.Result a = envoy.forward("/v1/completions",
        "{\"model\":\"" + MODEL + "\",\"prompt\":\"" + prefix + " first\",\"max_tokens\":3}", Map.of(), 4, null);
    FakeEnvoy.Exchange x = envoy.open();
    x.requestHeaders("/v1/completions", Map.of(), null, false);
    x.requestBodyInChunks(("{\"model\":\"" + MODEL + "\",\"prompt\":\"" + prefix + " second\",\"max_tokens\":3}")
        .getBytes(StandardCharsets.UTF_8), 4);
    FakeEnvoy.Route b = x.route();
    assertThat(b.endpoints().get(0)).isEqualTo(a.route().endpoints().get(0));
    x.cancel();
    assertThat(JSON.readTree(a.text()).at("/usage/prompt_tokens").asInt()).isPositive();
  }

  @Test
  void responseBodyFirstByteAndEnd_driveTheLease() throws Exception {
    FakeEnvoy.Exchange x = envoy.open();
    x.requestHeaders("/v1/chat/completions", Map.of(), null, false);
    x.requestBodyInChunks(chat(List.<String[]>of(new String[] {"user", "lease" + words("i", 200)}), 2, true)
        .getBytes(StandardCharsets.UTF_8), 3);
    String ep = x.route().endpoints().get(0);
    assertThat(load(ep).prefillingRequests()).isEqualTo(1);
    x.responseHeaders(200, "text/event-stream", ep, false);
    assertThat(load(ep).prefillingRequests()).isEqualTo(1);
    x.responseBody("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n".getBytes(StandardCharsets.UTF_8), false);
    assertThat(load(ep).prefillingRequests()).as("first token seen").isZero();
    assertThat(load(ep).inFlightRequests()).isEqualTo(1);
    x.responseBody("data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8), true);
    assertThat(load(ep).inFlightRequests()).isZero();
    x.complete();
  }

  @Test
  void cancelledStreamEndsTheLease() throws Exception {
    FakeEnvoy.Exchange x = envoy.open();
    x.requestHeaders("/v1/chat/completions", Map.of(), null, false);
    x.requestBodyInChunks(chat(List.<String[]>of(new String[] {"user", "gone" + words("j", 50)}), 2, true)
        .getBytes(StandardCharsets.UTF_8), 2);
    String ep = x.route().endpoints().get(0);
    assertThat(load(ep).inFlightRequests()).isEqualTo(1);
    x.cancel();
    await().atMost(Duration.ofSeconds(10)).until(() -> load(ep).inFlightRequests() == 0);
  }

  @Test
  void invalidBodyIs400_oversizedBodyIs413() throws Exception {
    FakeEnvoy.Exchange x = envoy.open();
    x.requestHeaders("/v1/chat/completions", Map.of(), null, false);
    x.requestBodyInChunks("{\"model\":\"m\",\"messages\":\"not a list\"}".getBytes(StandardCharsets.UTF_8), 2);
    ProcessingResponse r = x.next();
    assertThat(r.getImmediateResponse().getStatus().getCodeValue()).isEqualTo(400);
    assertThat(JSON.readTree(r.getImmediateResponse().getBody().toStringUtf8()).at("/error/type").asText()).isEqualTo("BadRequestError");
    x.complete();

    FakeEnvoy.Exchange big = envoy.open();
    big.requestHeaders("/v1/completions", Map.of(), null, false);
    big.requestBody(new byte[700_000], false);
    big.requestBody(new byte[700_000], false); // past the 1 MiB limit of this service
    ProcessingResponse t = big.next();
    assertThat(t.getImmediateResponse().getStatus().getCodeValue()).isEqualTo(413);
    big.complete();
  }

  /** Break test: a garbage priority header was read as 0, a bad body priority ignored; both are 400 now. */
  @Test
  void garbagePriorityHeaderAndBadBodyPriorityAre400() throws Exception {
    String chat = chat(List.<String[]>of(new String[] {"user", "hi"}), 1, false);
    FakeEnvoy.Exchange x = envoy.open();
    x.requestHeaders("/v1/chat/completions", Map.of("x-kvroute-priority", "abc"), null, false);
    x.requestBodyInChunks(chat.getBytes(StandardCharsets.UTF_8), 1);
    ProcessingResponse r = x.next();
    assertThat(r.getImmediateResponse().getStatus().getCodeValue()).isEqualTo(400);
    assertThat(JSON.readTree(r.getImmediateResponse().getBody().toStringUtf8()).at("/error/message").asText())
        .startsWith("x-kvroute-priority: \"abc\" (expected: a decimal integer");
    x.complete();

    FakeEnvoy.Exchange y = envoy.open();
    y.requestHeaders("/v1/chat/completions", Map.of(), null, false);
    y.requestBodyInChunks(chat.replaceFirst("\\{", "{\"priority\":1.5,").getBytes(StandardCharsets.UTF_8), 1);
    ProcessingResponse q = y.next();
    assertThat(q.getImmediateResponse().getStatus().getCodeValue()).isEqualTo(400);
    assertThat(JSON.readTree(q.getImmediateResponse().getBody().toStringUtf8()).at("/error/param").asText())
        .isEqualTo("priority");
    y.complete();
  }

  @Test
  void requestTrailers_endTheBodyAndAreAnswered() throws Exception {
    FakeEnvoy.Exchange x = envoy.open();
    x.requestHeaders("/v1/completions", Map.of(), null, false);
    byte[] body = ("{\"model\":\"" + MODEL + "\",\"prompt\":\"trailers\",\"max_tokens\":1}").getBytes(StandardCharsets.UTF_8);
    x.requestBody(java.util.Arrays.copyOf(body, 10), false);
    x.requestBody(java.util.Arrays.copyOfRange(body, 10, body.length), false);
    x.requests.onNext(io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest.newBuilder()
        .setRequestTrailers(io.envoyproxy.envoy.service.ext_proc.v3.HttpTrailers.getDefaultInstance()).build());
    ProcessingResponse h = x.next();
    assertThat(h.hasRequestHeaders()).isTrue();
    ProcessingResponse b = x.next();
    var streamed = b.getRequestBody().getResponse().getBodyMutation().getStreamedResponse();
    assertThat(streamed.getBody().toByteArray()).isEqualTo(body);
    assertThat(streamed.getEndOfStream()).as("the trailers end the request, not the body").isFalse();
    assertThat(x.next().hasRequestTrailers()).isTrue();
    x.cancel();
  }

  @Test
  void modelAlias_bodyRewrittenWithItsContentLength() throws Exception {
    ProxyConfig cfg = config(engines.urls()).withModels(new dev.kvroute.proxy.config.ModelsConfig(
        Duration.ofSeconds(30), 128, true, Map.of("public-name", MODEL)));
    try (EndpointPicker p = EndpointPicker.start(cfg, 0)) {
      await().atMost(Duration.ofSeconds(20)).until(() -> p.routableEndpoints().size() == 3);
      ExtProcService s = new ExtProcService(p, 1 << 20);
      String name = "alias-" + System.nanoTime();
      Server srv = InProcessServerBuilder.forName(name).addService(s).build().start();
      ManagedChannel ch = InProcessChannelBuilder.forName(name).build();
      try {
        FakeEnvoy.Result r = new FakeEnvoy(ch).forward("/v1/chat/completions",
            chat(List.<String[]>of(new String[] {"user", "alias"}), 2, false).replace(MODEL, "public-name"), Map.of(), 2, null);
        String forwarded = new String(r.route().body(), StandardCharsets.UTF_8);
        assertThat(forwarded).contains("\"model\":\"" + MODEL + "\"").doesNotContain("public-name");
        assertThat(r.route().setHeaders()).containsEntry("content-length", Integer.toString(r.route().body().length));
        assertThat(r.status()).isEqualTo(200);
        assertNoLeaseLeft(p, s);
      } finally {
        ch.shutdownNow();
        srv.shutdownNow();
      }
    }
  }

  @Test
  void unknownModelIs404() throws Exception {
    FakeEnvoy.Exchange x = envoy.open();
    x.requestHeaders("/v1/completions", Map.of(), null, false);
    x.requestBodyInChunks("{\"model\":\"no-such-model\",\"prompt\":\"hi\",\"max_tokens\":1}".getBytes(StandardCharsets.UTF_8), 2);
    ProcessingResponse r = x.next();
    assertThat(r.getImmediateResponse().getStatus().getCodeValue()).isEqualTo(404);
    x.complete();
  }

  @Test
  void requestWithoutBody_isPickedAtItsHeaders() throws Exception {
    FakeEnvoy.Exchange x = envoy.open();
    x.requestHeaders("/v1/models", Map.of(":method", "GET"), null, true);
    ProcessingResponse h = x.next();
    assertThat(h.hasRequestHeaders()).isTrue();
    String dest = h.getRequestHeaders().getResponse().getHeaderMutation().getSetHeaders(0).getHeader().getRawValue().toStringUtf8();
    assertThat(picker.routableEndpoints()).contains(dest);
    x.complete();
  }
}
