package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.kvroute.proxy.config.HealthCheckConfig;
import dev.kvroute.proxy.config.ProxyConfig;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A backend whose models cannot be read is asked again every health-check interval; the log says so
 * at INFO once per reason, never quoting the backend's body, and repeats it only at DEBUG.
 */
@ExtendWith(NettyLeakExtension.class)
final class ModelDiscoveryLogIT {
  private final Logger jul = Logger.getLogger(ModelDiscovery.class.getName());
  private final List<LogRecord> logged = new CopyOnWriteArrayList<>();
  private final Handler capture = new Handler() {
    @Override
    public void publish(LogRecord r) {
      logged.add(r);
    }

    @Override
    public void flush() {}

    @Override
    public void close() {}
  };
  private Level levelBefore;
  private HttpServer backend;
  private final AtomicInteger modelReads = new AtomicInteger();
  /** What {@code /v1/models} answers: a status, or 200 with a one-model list. */
  private volatile int modelsStatus = 503;

  @BeforeEach
  void start() throws IOException {
    levelBefore = jul.getLevel();
    jul.setLevel(Level.ALL); // DEBUG records too, to see that the repeats are there, only quieter
    jul.addHandler(capture);
    backend = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 16);
    backend.createContext("/", this::answer);
    backend.start();
  }

  @AfterEach
  void stop() {
    jul.removeHandler(capture);
    jul.setLevel(levelBefore);
    backend.stop(0);
  }

  private void answer(HttpExchange x) throws IOException {
    String path = x.getRequestURI().getPath();
    int status;
    String body;
    if (path.equals("/health")) {
      status = 200;
      body = "";
    } else if (path.equals("/v1/models")) {
      modelReads.incrementAndGet();
      status = modelsStatus;
      body = status == 200 ? "{\"object\":\"list\",\"data\":[{\"id\":\"m1\",\"object\":\"model\"}]}" : "{}";
      if (status == 299) { // a broken backend: 200 with a body that is not JSON, different every time
        status = 200;
        body = "sk_live_" + java.util.UUID.randomUUID() + " upstream error";
      }
    } else {
      status = 404;
      body = "{}";
    }
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    x.sendResponseHeaders(status, b.length == 0 ? -1 : b.length);
    if (b.length > 0) {
      x.getResponseBody().write(b);
    }
    x.close();
  }

  private List<String> at(Level level) {
    java.util.logging.Formatter f = new java.util.logging.SimpleFormatter();
    return logged.stream().filter(r -> r.getLevel() == level).map(f::formatMessage).toList();
  }

  private List<String> cannotRead(Level level) {
    return at(level).stream().filter(m -> m.contains("cannot read its models yet")).toList();
  }

  /** Under load a read may also time out, a reason of its own; no reason is said twice. */
  private static void noReasonTwice(List<String> told) {
    assertThat(told).doesNotHaveDuplicates();
  }

  private void readsAtLeast(int more) {
    int target = modelReads.get() + more;
    await().atMost(Duration.ofSeconds(10)).until(() -> modelReads.get() >= target);
  }

  @Test
  void aBackendWhoseModelsCannotBeReadIsLoggedOncePerReason() throws Exception {
    URI url = URI.create("http://127.0.0.1:" + backend.getAddress().getPort());
    try (KvrouteServer router = KvrouteServer.start(ProxyConfig.defaults().withPort(0).withAdminPort(-1)
        .withHealthCheck(new HealthCheckConfig(true, "/health", Duration.ofMillis(50), Duration.ofMillis(500), 1, 1,
            Duration.ZERO))
        .withBackendUrls(List.of(url)))) {
      readsAtLeast(6);
      List<String> told = cannotRead(Level.INFO);
      assertThat(told).as("said at INFO").isNotEmpty().last().asString()
          .contains("/v1/models answered 503").contains("asked again every 50 ms");
      assertThat(cannotRead(Level.FINE)).as("the repeats of a reason, at DEBUG").hasSizeGreaterThanOrEqualTo(4);
      noReasonTwice(told);

      modelsStatus = 500; // another reason: said again
      readsAtLeast(4);
      assertThat(cannotRead(Level.INFO)).hasSizeGreaterThan(told.size()).last().asString()
          .contains("/v1/models answered 500");
      noReasonTwice(cannotRead(Level.INFO));

      modelsStatus = 503; // alternating between reasons already said: quiet
      readsAtLeast(3);
      modelsStatus = 500;
      readsAtLeast(3);
      assertThat(cannotRead(Level.INFO)).filteredOn(m -> m.contains("answered 50")).as("503 and 500 once each")
          .hasSize(2);
      noReasonTwice(cannotRead(Level.INFO));

      modelsStatus = 299; // garbage, never the same twice: said once, without the body's text
      readsAtLeast(4);
      List<String> garbage = cannotRead(Level.INFO).stream().filter(m -> m.contains("not a model list")).toList();
      assertThat(garbage).hasSize(1).first().asString().contains("not JSON").doesNotContain("sk_live");

      modelsStatus = 200;
      await().atMost(Duration.ofSeconds(10)).until(() -> at(Level.INFO).stream().anyMatch(m -> m.contains(" serves ")));
      assertThat(at(Level.INFO).stream().filter(m -> m.contains(" serves ")).findFirst().orElseThrow()).contains("[m1]");
      assertThat(router.backends()).hasSize(1);
    }
  }
}
