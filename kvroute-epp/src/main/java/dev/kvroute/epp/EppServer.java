package dev.kvroute.epp;

import com.sun.net.httpserver.HttpServer;
import dev.kvroute.proxy.EndpointPicker;
import dev.kvroute.proxy.config.ProxyConfig;
import io.grpc.Server;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * A running endpoint picker ({@code kvroute epp}): Envoy's {@code ext_proc} service ({@link
 * ExtProcService}) and the gRPC health services GAIE asks for ({@code liveness}, {@code readiness},
 * {@code envoy.service.ext_proc.v3.ExternalProcessor}) on one gRPC port, and Prometheus metrics
 * ({@code /metrics}, plus {@code /health}) on an HTTP port.
 *
 * <pre>{@code
 * try (EppServer epp = EppServer.start(config, 9002, 9090, 2)) {
 *   int port = epp.grpcPort();
 * }
 * }</pre>
 *
 * <p>Readiness: {@code SERVING} once the fleet is known (the picker started, so discovery listed it),
 * {@code NOT_SERVING} from {@link #drain} on. Liveness stays {@code SERVING} until {@link #close}.
 *
 * <p>Thread-safe.
 */
public final class EppServer implements AutoCloseable {
  private final EndpointPicker picker;
  private final ExtProcService service;
  private final HealthStatusManager health = new HealthStatusManager();
  private final Server grpc;
  private final HttpServer http;

  private EppServer(EndpointPicker picker, int grpcPort, int metricsPort) {
    this.picker = picker;
    this.service = new ExtProcService(picker, picker.config().limits().maxBodyBytes());
    this.grpc = NettyServerBuilder.forAddress(new InetSocketAddress(picker.config().bind(), grpcPort))
        .addService(service)
        .addService(health.getHealthService())
        .maxInboundMessageSize(16 << 20)
        .build();
    try {
      grpc.start();
    } catch (IOException e) {
      throw new IllegalStateException("cannot listen for ext_proc on " + picker.config().bind() + ":" + grpcPort
          + ": " + e.getMessage(), e);
    }
    HttpServer h = null;
    if (metricsPort >= 0) {
      try {
        h = HttpServer.create(new InetSocketAddress(picker.config().bind(), metricsPort), 64);
      } catch (IOException e) {
        grpc.shutdownNow();
        throw new IllegalStateException("cannot listen for metrics on " + picker.config().bind() + ":" + metricsPort
            + ": " + e.getMessage(), e);
      }
      h.createContext("/metrics", x -> reply(x, 200, "text/plain; version=0.0.4; charset=utf-8", picker.scrapeMetrics()));
      h.createContext("/health", x -> reply(x, 200, "text/plain", "ok\n"));
      h.start();
    }
    this.http = h;
    for (String s : new String[] {"", Gaie.LIVENESS, Gaie.READINESS, Gaie.EXT_PROC_SERVICE}) {
      health.setStatus(s, ServingStatus.SERVING);
    }
  }

  private static void reply(com.sun.net.httpserver.HttpExchange x, int status, String type, String body) throws IOException {
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    x.getResponseHeaders().set("Content-Type", type);
    x.sendResponseHeaders(status, b.length);
    try (OutputStream o = x.getResponseBody()) {
      o.write(b);
    }
  }

  /**
   * Starts the picker's fleet ({@link EndpointPicker#start}) and then its servers.
   *
   * @param grpcPort the ext_proc and health port (0: ephemeral; GAIE's default is 9002)
   * @param metricsPort the HTTP metrics port (0: ephemeral; -1: none)
   * @param fallbacks endpoints named after the chosen one
   * @throws IllegalStateException if a port cannot be bound or discovery cannot list the pods
   */
  public static EppServer start(ProxyConfig config, int grpcPort, int metricsPort, int fallbacks) {
    EndpointPicker picker = EndpointPicker.start(config, fallbacks);
    try {
      return new EppServer(picker, grpcPort, metricsPort);
    } catch (RuntimeException e) {
      picker.close();
      throw e;
    }
  }

  /** The bound gRPC port. */
  public int grpcPort() {
    return grpc.getPort();
  }

  /** The bound metrics port, or -1. */
  public int metricsPort() {
    return http == null ? -1 : http.getAddress().getPort();
  }

  /** The picker (fleet and routing core). */
  public EndpointPicker picker() {
    return picker;
  }

  /** The ext_proc service (for its open-stream count). */
  public ExtProcService service() {
    return service;
  }

  /**
   * Graceful shutdown, first half: readiness and the ext_proc health service turn {@code NOT_SERVING}
   * (gateways stop choosing this replica), the server stops taking new streams, and the streams in
   * flight finish, for at most {@code timeout}.
   *
   * @return whether every stream finished in time
   * @throws InterruptedException if interrupted while waiting
   */
  public boolean drain(Duration timeout) throws InterruptedException {
    health.setStatus(Gaie.READINESS, ServingStatus.NOT_SERVING);
    health.setStatus(Gaie.EXT_PROC_SERVICE, ServingStatus.NOT_SERVING);
    grpc.shutdown();
    return grpc.awaitTermination(timeout.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** Marks readiness and ext_proc {@code NOT_SERVING} without stopping anything (for tests and hooks). */
  public void notReady() {
    health.setStatus(Gaie.READINESS, ServingStatus.NOT_SERVING);
    health.setStatus(Gaie.EXT_PROC_SERVICE, ServingStatus.NOT_SERVING);
  }

  /** Stops the servers (cancelling streams in flight, whose leases end) and the picker. */
  @Override
  public void close() {
    health.enterTerminalState();
    grpc.shutdownNow();
    try {
      grpc.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (http != null) {
      http.stop(0);
    }
    picker.close();
  }

}
