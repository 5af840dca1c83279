package dev.kvroute.epp;

import dev.kvroute.proxy.EndpointPicker;
import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Envoy's {@code ext_proc} service speaking the Gateway API Inference Extension's endpoint-picker
 * protocol over kvroute's routing: one {@link EppStream} per HTTP request Envoy processes.
 *
 * <p>Envoy's filter must send the request body and the response body in {@code FULL_DUPLEX_STREAMED}
 * mode (what GAIE's gateways configure) and the request and response headers and trailers
 * ({@code SEND}); see docs/kubernetes.md.
 *
 * <p>Thread-safe: gRPC serializes the callbacks of each stream; streams run concurrently.
 */
public final class ExtProcService extends ExternalProcessorGrpc.ExternalProcessorImplBase {
  private final EndpointPicker picker;
  private final long maxBodyBytes;
  private final AtomicInteger open = new AtomicInteger();

  /**
   * A service picking with {@code picker}.
   *
   * @param maxBodyBytes the largest request body buffered before the pick; larger ones are refused
   *     with an immediate 413 (the proxy's {@code limits.maxBodyBytes})
   */
  public ExtProcService(EndpointPicker picker, long maxBodyBytes) {
    if (maxBodyBytes < 1) {
      throw new IllegalArgumentException("maxBodyBytes: " + maxBodyBytes + " (expected: >= 1)");
    }
    this.picker = picker;
    this.maxBodyBytes = maxBodyBytes;
  }

  @Override
  public StreamObserver<ProcessingRequest> process(StreamObserver<ProcessingResponse> responses) {
    open.incrementAndGet();
    return new EppStream(picker, maxBodyBytes, responses, open::decrementAndGet);
  }

  /** Streams that have begun and not yet ended (completed, failed or cancelled). */
  public int openStreams() {
    return open.get();
  }
}
