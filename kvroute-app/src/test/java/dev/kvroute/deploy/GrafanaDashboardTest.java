package dev.kvroute.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.kvroute.engine.server.MockEngineOptions;
import dev.kvroute.engine.server.MockEngineServer;
import dev.kvroute.proxy.KvrouteServer;
import dev.kvroute.proxy.config.ProxyConfig;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The deployment files agree with the code: the Grafana dashboard ({@code
 * deploy/grafana/dashboards/kvroute.json}) is valid and every metric its panels query is one a live
 * router or mock engine exports, checked against real {@code /metrics} scrapes of an in-process
 * router in front of an in-process mock engine after some traffic (including a failed and retried
 * request, so the error counters exist); and Prometheus ({@code deploy/prometheus/prometheus.yml})
 * scrapes the router and every engine that {@code docker-compose.yml} starts.
 */
class GrafanaDashboardTest {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Path REPO = repositoryRoot();
  private static final Path DASHBOARD = REPO.resolve("deploy/grafana/dashboards/kvroute.json");

  private static MockEngineServer engine;
  private static KvrouteServer router;
  private static Set<String> exported;

  @BeforeAll
  static void scrapeALiveRouterAndEngine() throws Exception {
    engine =
        MockEngineServer.start(
            MockEngineOptions.builder().port(0).timeScale(50).enablePromptTokensDetails(true).build());
    router =
        KvrouteServer.start(
            ProxyConfig.defaults()
                .withPort(0)
                .withAdminPort(-1)
                .withPolicy("cache-aware")
                .withBackendUrls(List.of(URI.create(engine.url()))));
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    String first = "Write a haiku about caches.";
    HttpResponse<String> turn1 = chat(http, List.of(Map.of("role", "user", "content", first)), false, null);
    assertThat(turn1.statusCode()).as(turn1.body()).isEqualTo(200);
    String reply = JSON.readTree(turn1.body()).at("/choices/0/message/content").asText();
    List<Map<String, String>> history =
        List.of(
            Map.of("role", "user", "content", first),
            Map.of("role", "assistant", "content", reply),
            Map.of("role", "user", "content", "Another one."));
    assertThat(chat(http, history, true, null).statusCode()).isEqualTo(200);
    // The engine hangs up before answering: an upstream error, a retry, then a failure (one backend).
    assertThat(chat(http, history, false, "close-before-headers").statusCode()).isEqualTo(502);

    exported = new TreeSet<>();
    exported.addAll(sampleNames(get(http, router.uri() + "/metrics")));
    exported.addAll(sampleNames(get(http, engine.url() + "/metrics")));
  }

  @AfterAll
  static void stop() throws Exception {
    if (router != null) {
      router.close();
    }
    if (engine != null) {
      engine.close();
    }
  }

  @Test
  void dashboardIsValidGrafanaJsonOnTheProvisionedDatasource() throws IOException {
    JsonNode dashboard = JSON.readTree(DASHBOARD.toFile());

    assertThat(dashboard.path("uid").asText()).isEqualTo("kvroute");
    assertThat(dashboard.path("title").asText()).isNotBlank();
    assertThat(dashboard.path("schemaVersion").asInt()).isGreaterThanOrEqualTo(36);
    assertThat(dashboard.path("panels").isArray()).isTrue();
    Set<Integer> ids = new HashSet<>();
    int queries = 0;
    for (JsonNode panel : dashboard.path("panels")) {
      String title = panel.path("title").asText();
      assertThat(title).as("panel title").isNotBlank();
      assertThat(ids.add(panel.path("id").asInt())).as("unique id of panel %s", title).isTrue();
      JsonNode grid = panel.path("gridPos");
      assertThat(grid.path("w").asInt()).as("width of %s", title).isBetween(1, 24);
      assertThat(grid.path("x").asInt() + grid.path("w").asInt()).as("right edge of %s", title).isLessThanOrEqualTo(24);
      if (panel.path("type").asText().equals("row")) {
        continue;
      }
      assertThat(panel.path("datasource").path("uid").asText()).as("datasource of %s", title).isEqualTo("prometheus");
      assertThat(panel.path("targets")).as("queries of %s", title).isNotEmpty();
      Set<String> refIds = new HashSet<>();
      for (JsonNode target : panel.path("targets")) {
        assertThat(refIds.add(target.path("refId").asText())).as("unique refId in %s", title).isTrue();
        assertThat(target.path("expr").asText()).as("query of %s", title).isNotBlank();
        assertThat(metricNames(target.path("expr").asText())).as("metrics of a query in %s", title).isNotEmpty();
        queries++;
      }
    }
    assertThat(queries).isGreaterThanOrEqualTo(10);

    String datasources = Files.readString(REPO.resolve("deploy/grafana/provisioning/datasources/prometheus.yml"));
    assertThat(datasources).contains("uid: prometheus").contains("url: http://prometheus:9090");
  }

  @Test
  void everyPanelQueriesMetricsThatTheRouterOrTheEngineExports() throws IOException {
    JsonNode dashboard = JSON.readTree(DASHBOARD.toFile());
    List<String> unknown = new ArrayList<>();
    Set<String> queried = new TreeSet<>();
    for (JsonNode panel : dashboard.path("panels")) {
      for (JsonNode target : panel.path("targets")) {
        for (String name : metricNames(target.path("expr").asText())) {
          queried.add(name);
          if (!exported.contains(name)) {
            unknown.add(name + " (panel \"" + panel.path("title").asText() + "\")");
          }
        }
      }
    }
    assertThat(unknown).as("queried metrics not in the live scrapes %s", exported).isEmpty();
    // The issue's panels: requests and errors per backend, TTFT, in-flight, rules, predicted vs
    // reported cache hits, the engines' queue and KV usage.
    assertThat(queried)
        .contains(
            "kvroute_requests_total",
            "kvroute_upstream_errors_total",
            "kvroute_ttft_seconds_bucket",
            "kvroute_backend_inflight_requests",
            "kvroute_routing_decisions_total",
            "kvroute_prefix_predicted_tokens_sum",
            "kvroute_engine_cached_tokens_sum",
            "vllm:num_requests_waiting",
            "vllm:kv_cache_usage_perc");
  }

  @Test
  void metricNameExtractionSeesThroughPromQl() {
    assertThat(
            metricNames(
                "histogram_quantile(0.9, sum by (le, backend) (rate(kvroute_ttft_seconds_bucket{outcome!=\"x y\"}[$__rate_interval])))"
                    + " / ignoring(a) vllm:kv_cache_usage_perc offset 5m"))
        .containsExactlyInAnyOrder("kvroute_ttft_seconds_bucket", "vllm:kv_cache_usage_perc");
    assertThat(metricNames("sum(rate(nope_total[1m])) and on (backend) up")).containsExactlyInAnyOrder("nope_total", "up");
  }

  @Test
  void prometheusScrapesTheRouterAndEveryComposeEngine() throws IOException {
    YAMLMapper yaml = new YAMLMapper();
    JsonNode compose = yaml.readTree(REPO.resolve("docker-compose.yml").toFile());
    Set<String> expected = new TreeSet<>();
    for (Iterator<String> it = compose.path("services").fieldNames(); it.hasNext(); ) {
      String service = it.next();
      if (service.startsWith("engine-")) {
        expected.add(service + ":8000");
      } else if (service.equals("router")) {
        expected.add("router:8080");
      }
    }
    assertThat(expected).hasSize(5);

    JsonNode prometheus = yaml.readTree(REPO.resolve("deploy/prometheus/prometheus.yml").toFile());
    Set<String> targets = new TreeSet<>();
    for (JsonNode job : prometheus.path("scrape_configs")) {
      for (JsonNode config : job.path("static_configs")) {
        config.path("targets").forEach(t -> targets.add(t.asText()));
      }
    }
    assertThat(targets).isEqualTo(expected);
  }

  // ---------------------------------------------------------------------------------------------

  private static final Pattern IDENTIFIER = Pattern.compile("[a-zA-Z_:][a-zA-Z0-9_:]*");
  private static final Set<String> KEYWORDS =
      Set.of("by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "and", "or", "unless");

  /**
   * The metric names a PromQL expression selects: identifiers that are not functions (followed by
   * "("), keywords, label names (inside {@code {}} or {@code by (...)}) or durations.
   */
  static Set<String> metricNames(String expr) {
    String s = expr.replaceAll("\"(?:[^\"\\\\]|\\\\.)*\"", "\"\"");
    s = s.replaceAll("\\{[^}]*}", " ");
    s = s.replaceAll("\\[[^]]*]", " ");
    s = s.replaceAll("\\b(by|without|on|ignoring|group_left|group_right)\\s*\\([^)]*\\)", " ");
    s = s.replaceAll("\\boffset\\s+\\S+", " ");
    Set<String> names = new TreeSet<>();
    Matcher m = IDENTIFIER.matcher(s);
    while (m.find()) {
      String token = m.group();
      boolean afterDigit = m.start() > 0 && Character.isDigit(s.charAt(m.start() - 1));
      boolean function = s.substring(m.end()).stripLeading().startsWith("(");
      if (!function && !afterDigit && !KEYWORDS.contains(token)) {
        names.add(token);
      }
    }
    return names;
  }

  /** Sample names (the part before labels or value) of a Prometheus text exposition. */
  private static Set<String> sampleNames(String exposition) {
    Set<String> names = new TreeSet<>();
    for (String line : exposition.split("\n")) {
      if (line.isBlank() || line.startsWith("#")) {
        continue;
      }
      int end = 0;
      while (end < line.length() && line.charAt(end) != '{' && line.charAt(end) != ' ') {
        end++;
      }
      names.add(line.substring(0, end));
    }
    return names;
  }

  private static HttpResponse<String> chat(
      HttpClient http, List<Map<String, String>> messages, boolean stream, String fault)
      throws IOException, InterruptedException {
    ObjectNode body = JSON.createObjectNode();
    body.put("model", MockEngineOptions.DEFAULT_MODEL).put("user", "dashboard").put("max_tokens", 6).put("stream", stream);
    body.set("messages", JSON.valueToTree(messages));
    HttpRequest.Builder request =
        HttpRequest.newBuilder(URI.create(router.uri() + "/v1/chat/completions"))
            .timeout(Duration.ofSeconds(30))
            .header("content-type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body)));
    if (fault != null) {
      request.header("x-mock-fault", fault);
    }
    return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  private static String get(HttpClient http, String url) throws IOException, InterruptedException {
    HttpResponse<String> response =
        http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(response.statusCode()).as("GET %s", url).isEqualTo(200);
    return response.body();
  }

  private static Path repositoryRoot() {
    Path dir = Path.of(System.getProperty("basedir", "")).toAbsolutePath();
    for (Path p = dir; p != null; p = p.getParent()) {
      if (Files.isRegularFile(p.resolve("docker-compose.yml")) && Files.isDirectory(p.resolve("deploy"))) {
        return p;
      }
    }
    throw new IllegalStateException("no repository root with docker-compose.yml above " + dir);
  }
}
