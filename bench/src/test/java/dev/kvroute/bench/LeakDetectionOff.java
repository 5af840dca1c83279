package dev.kvroute.bench;

import io.netty.util.ResourceLeakDetector;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Turns Netty's leak detection off for a test class and restores the previous level after it: for
 * the timing-sensitive real runs, where paranoid detection (the build's default for tests) records a
 * stack trace per buffer and slows the real path about tenfold, which the time scale multiplies into
 * TTFT. Leaks in the proxy and the engine are checked by their own integration tests.
 */
public final class LeakDetectionOff implements BeforeAllCallback, AfterAllCallback {
  private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(LeakDetectionOff.class);

  @Override
  public void beforeAll(ExtensionContext context) {
    context.getStore(NS).put("level", ResourceLeakDetector.getLevel());
    ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.DISABLED);
  }

  @Override
  public void afterAll(ExtensionContext context) {
    ResourceLeakDetector.setLevel(context.getStore(NS).get("level", ResourceLeakDetector.Level.class));
  }
}
