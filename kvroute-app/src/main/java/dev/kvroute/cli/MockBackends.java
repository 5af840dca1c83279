package dev.kvroute.cli;

import dev.kvroute.engine.server.MockEngineFleet;
import dev.kvroute.engine.server.MockEngineOptions;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;

/**
 * Bundled mock engines ({@code --mock-backends N}): N vLLM-compatible mock engines started in this
 * process on ephemeral loopback ports, with {@code cached_tokens} reporting on, so that
 * {@code kvroute serve} works without a real fleet.
 *
 * <p>Thread-safe.
 */
final class MockBackends implements AutoCloseable {
  private final MockEngineFleet fleet;
  private final List<URI> urls;

  private MockBackends(MockEngineFleet fleet) {
    this.fleet = fleet;
    List<URI> u = new ArrayList<>();
    for (String s : fleet.urls()) {
      u.add(URI.create(s));
    }
    this.urls = List.copyOf(u);
  }

  /** Starts {@code n} engines tokenizing with {@code tokenizer} (the router's own encoding). */
  static MockBackends start(int n, String tokenizer) {
    MockEngineOptions options = MockEngineOptions.builder()
        .host("127.0.0.1")
        .port(0)
        .tokenizer(tokenizer)
        .enablePromptTokensDetails(true)
        .build();
    return new MockBackends(MockEngineFleet.start(options, n));
  }

  List<URI> urls() {
    return urls;
  }

  @Override
  public void close() {
    fleet.close();
  }
}
