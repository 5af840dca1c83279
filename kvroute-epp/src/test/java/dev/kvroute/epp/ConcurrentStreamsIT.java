package dev.kvroute.epp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.kvroute.core.BackendId;
import dev.kvroute.engine.server.MockEngineFleet;
import dev.kvroute.proxy.EndpointPicker;
import dev.kvroute.proxy.config.HealthCheckConfig;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A thousand ext_proc streams open at once against one picker: every one is routed while all are in
 * flight (the loads count all of them), answered through to its end (or cancelled), and afterwards no
 * stream, lease or prefill token is left. The upstream answers are written by the test (an SSE stream
 * with usage), so the thousand requests stay in-process and bounded.
 */
final class ConcurrentStreamsIT {
  static final int STREAMS = 1_000;

  @Test
  void thousandConcurrentStreamsCompleteWithNoLeak() throws Exception {
    try (MockEngineFleet engines = MockEngineFleet.start(EndpointPickerIT.options(), 3);
        EndpointPicker picker = EndpointPicker.start(EndpointPickerIT.config(engines.urls())
            // probes that a busy machine does not fail: the engines stay candidates throughout
            .withHealthCheck(new HealthCheckConfig(true, "/health", Duration.ofSeconds(1), Duration.ofSeconds(10), 10, 1,
                Duration.ZERO)), 1)) {
      await().atMost(Duration.ofSeconds(20)).until(() -> picker.routableEndpoints().size() == 3);
      ExtProcService service = new ExtProcService(picker, 1 << 20);
      String name = "thousand-" + System.nanoTime();
      Server server = InProcessServerBuilder.forName(name).addService(service).build().start();
      ManagedChannel channel = InProcessChannelBuilder.forName(name).build();
      try {
        FakeEnvoy envoy = new FakeEnvoy(channel);
        List<FakeEnvoy.Exchange> exchanges = new ArrayList<>(STREAMS);
        for (int i = 0; i < STREAMS; i++) {
          FakeEnvoy.Exchange x = envoy.open();
          x.requestHeaders("/v1/chat/completions", Map.of("x-session-id", "s" + (i % 50)), null, false);
          x.requestBodyInChunks(EndpointPickerIT.chat(List.<String[]>of(new String[] {"system", "shared system prompt"
              + EndpointPickerIT.words("sys", 40)}, new String[] {"user", "user " + i % 50 + " asks " + i}), 4, true)
              .getBytes(StandardCharsets.UTF_8), 3);
          exchanges.add(x);
        }
        List<String> endpoints = new ArrayList<>(STREAMS);
        for (FakeEnvoy.Exchange x : exchanges) {
          endpoints.add(x.route().endpoints().get(0));
        }
        // all thousand are in flight at once, each counted once on the backend it was sent to
        Map<String, Integer> expected = new HashMap<>();
        endpoints.forEach(e -> expected.merge(e, 1, Integer::sum));
        int total = 0;
        for (String e : picker.endpoints()) {
          int n = picker.core().loads().load(BackendId.of(e)).inFlightRequests();
          assertThat(n).as("in flight on %s", e).isEqualTo(expected.getOrDefault(e, 0));
          total += n;
        }
        assertThat(total).isEqualTo(STREAMS);
        assertThat(service.openStreams()).isEqualTo(STREAMS);

        for (int i = 0; i < STREAMS; i++) {
          FakeEnvoy.Exchange x = exchanges.get(i);
          if (i % 10 == 9) {
            x.cancel(); // a tenth go away before their response
            continue;
          }
          x.responseHeaders(200, "text/event-stream", endpoints.get(i), false);
          x.responseBody("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n".getBytes(StandardCharsets.UTF_8), false);
          if (i % 10 == 4) {
            x.cancel(); // and a tenth in the middle of it
            continue;
          }
          x.responseBody(("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":60,\"completion_tokens\":4,"
              + "\"prompt_tokens_details\":{\"cached_tokens\":32}}}\n\ndata: [DONE]\n\n").getBytes(StandardCharsets.UTF_8), true);
          x.responseTrailers();
          x.complete();
        }
        EndpointPickerIT.assertNoLeaseLeft(picker, service);
        assertThat(picker.scrapeMetrics()).contains("kvroute_requests_total");
      } finally {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
    }
  }
}
