package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.load.BackendLoad;
import java.time.Duration;
import java.util.function.Supplier;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * After every test of a class, checks that the router's load leases all ended: no request in flight,
 * none prefilling, no prefill tokens counted on any backend. Waits up to five seconds for exchanges
 * still finishing (a timeout, a cancelled upstream request), then fails the test that leaked, by
 * name. Register it after the router's {@link ServerExtension}:
 *
 * <pre>{@code
 * @RegisterExtension @Order(4)
 * static final LeaseCheckExtension LEASES = new LeaseCheckExtension(() -> ROUTER.get());
 * }</pre>
 */
final class LeaseCheckExtension implements AfterEachCallback {
  private final Supplier<KvrouteServer> router;

  LeaseCheckExtension(Supplier<KvrouteServer> router) {
    this.router = router;
  }

  @Override
  public void afterEach(ExtensionContext context) {
    KvrouteServer r = router.get();
    await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> {
      for (BackendId b : r.backends()) {
        BackendLoad load = r.core().loads().load(b);
        String test = context.getDisplayName();
        assertThat(load.inFlightRequests()).as("in flight on %s after %s", b, test).isZero();
        assertThat(load.prefillingRequests()).as("prefilling on %s after %s", b, test).isZero();
        assertThat(load.inFlightPrefillTokens()).as("prefill tokens on %s after %s", b, test).isZero();
      }
    });
  }
}
