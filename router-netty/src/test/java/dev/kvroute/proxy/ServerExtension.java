package dev.kvroute.proxy;

import java.util.function.Supplier;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Starts a server (a router, a mock engine, a fake backend) before a test class and closes it after,
 * whatever happened (Armeria's {@code ServerExtension}). Register as a {@code static} field with
 * {@code @RegisterExtension} and {@code @Order} to start dependencies first.
 */
final class ServerExtension<T extends AutoCloseable> implements BeforeAllCallback, AfterAllCallback {
  private final Supplier<T> starter;
  private T server;

  ServerExtension(Supplier<T> starter) {
    this.starter = starter;
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    server = starter.get();
  }

  @Override
  public void afterAll(ExtensionContext context) throws Exception {
    if (server != null) {
      server.close();
      server = null;
    }
  }

  T get() {
    if (server == null) {
      throw new IllegalStateException("server not started");
    }
    return server;
  }
}
