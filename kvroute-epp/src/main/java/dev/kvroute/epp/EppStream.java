package dev.kvroute.epp;

import com.google.protobuf.ByteString;
import dev.kvroute.proxy.EndpointPicker;
import io.envoyproxy.envoy.service.ext_proc.v3.BodyMutation;
import io.envoyproxy.envoy.service.ext_proc.v3.BodyResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.CommonResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.HeaderMutation;
import io.envoyproxy.envoy.service.ext_proc.v3.HeadersResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpBody;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.StreamedBodyResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.TrailersResponse;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * One HTTP request as Envoy's {@code ext_proc} filter streams it (FULL_DUPLEX_STREAMED), and kvroute's
 * answers in the order Envoy requires (request headers, then request body, then trailers; the same for
 * the response).
 *
 * <ol>
 *   <li>Request headers: kept; with no body ({@code end_of_stream}) the pick happens at once.
 *   <li>Request body chunks: gathered (up to {@code maxBodyBytes}, else an immediate 413). At the end of
 *       the body the request is parsed and picked, and two answers go back: the request-headers answer
 *       ({@code x-gateway-destination-endpoint} set, the same value in the {@code envoy.lb} dynamic
 *       metadata, the route cache cleared, a new {@code content-length} when the body changed), then
 *       the body itself as streamed body responses of at most {@link Gaie#MAX_STREAMED_CHUNK_BYTES}.
 *       A refused request gets an immediate response instead (400, 404, 413, 429, 503).
 *   <li>Response headers: the served endpoint ({@code envoy.lb} metadata) moves the lease if Envoy used a
 *       fallback; the status and content type start the usage scan.
 *   <li>Response body chunks: passed back unchanged; the first is the first token, and the last (or the
 *       response trailers) ends the lease.
 *   <li>A stream that ends any other way (cancelled, failed, closed early) ends the lease, unserved
 *       unless a 2xx answer had begun.
 * </ol>
 *
 * <p>Not thread-safe: gRPC calls one stream's callbacks one at a time.
 */
final class EppStream implements StreamObserver<ProcessingRequest> {
  private static final System.Logger LOG = System.getLogger(EppStream.class.getName());

  private final EndpointPicker picker;
  private final long maxBodyBytes;
  private final StreamObserver<ProcessingResponse> out;
  private final Runnable onEnd;
  private Map<String, String> requestHeaders;
  private List<String> subset;
  private byte[] body = new byte[0];
  private int bodyLength;
  private EndpointPicker.Pick pick;
  private boolean requestAnswered;
  private boolean refused;
  private boolean ended;

  EppStream(EndpointPicker picker, long maxBodyBytes, StreamObserver<ProcessingResponse> out, Runnable onEnd) {
    this.picker = picker;
    this.maxBodyBytes = maxBodyBytes;
    this.out = out;
    this.onEnd = onEnd;
  }

  @Override
  public void onNext(ProcessingRequest req) {
    if (refused || ended) {
      return; // an immediate response ended the exchange; Envoy closes the stream
    }
    try {
      switch (req.getRequestCase()) {
        case REQUEST_HEADERS:
          onRequestHeaders(req);
          break;
        case REQUEST_BODY:
          onRequestBody(req.getRequestBody());
          break;
        case REQUEST_TRAILERS:
          if (!requestAnswered) {
            answerRequest(true, false); // the body (if any) ended with the trailers
          }
          if (!refused) {
            out.onNext(ProcessingResponse.newBuilder().setRequestTrailers(TrailersResponse.getDefaultInstance()).build());
          }
          break;
        case RESPONSE_HEADERS:
          onResponseHeaders(req);
          break;
        case RESPONSE_BODY:
          onResponseBody(req.getResponseBody());
          break;
        case RESPONSE_TRAILERS:
          if (pick != null) {
            pick.end();
          }
          out.onNext(ProcessingResponse.newBuilder().setResponseTrailers(TrailersResponse.getDefaultInstance()).build());
          break;
        default:
          break; // a message this protocol does not use
      }
    } catch (RuntimeException e) {
      LOG.log(Level.ERROR, "ext_proc stream failed", e);
      end();
      out.onError(Status.INTERNAL.withDescription("kvroute epp: " + e).asRuntimeException());
    }
  }

  private void onRequestHeaders(ProcessingRequest req) {
    HttpHeaders h = req.getRequestHeaders();
    requestHeaders = Gaie.headers(h.getHeaders());
    subset = Gaie.subset(req.getMetadataContext());
    if (h.getEndOfStream()) {
      answerRequest(false, false); // no body follows
    }
  }

  private void onRequestBody(HttpBody chunk) {
    ByteString b = chunk.getBody();
    if ((long) bodyLength + b.size() > maxBodyBytes) {
      refuse(413, "the request body is larger than " + maxBodyBytes + " bytes", -1);
      return;
    }
    if (bodyLength + b.size() > body.length) {
      body = Arrays.copyOf(body, Math.max(bodyLength + b.size(), (int) Math.min(Math.min(maxBodyBytes, Integer.MAX_VALUE - 8), body.length * 2L + 1024)));
    }
    b.copyTo(body, bodyLength);
    bodyLength += b.size();
    if (chunk.getEndOfStream()) {
      answerRequest(true, true);
    }
  }

  /**
   * Picks, then sends the request-headers answer and, when the request has a body ({@code sendBody}),
   * the (possibly rewritten) body, ending it when {@code bodyEnds} (no trailers follow).
   */
  private void answerRequest(boolean sendBody, boolean bodyEnds) {
    requestAnswered = true;
    Map<String, String> h = requestHeaders == null ? Map.of() : requestHeaders;
    String path = h.getOrDefault(":path", "/");
    byte[] whole = bodyLength == body.length ? body : Arrays.copyOf(body, bodyLength);
    body = null;
    pick = picker.pick(path, whole, name -> h.get(name.toLowerCase(Locale.ROOT)), subset);
    if (!pick.picked()) {
      refused = true;
      out.onNext(Gaie.immediate(pick.status(), pick.errorBody(), pick.retryAfterSeconds(),
          "kvroute_epp_" + pick.status()));
      return;
    }
    String destination = String.join(",", pick.endpoints());
    byte[] forward = pick.rewrittenBody();
    HeaderMutation.Builder mutation = HeaderMutation.newBuilder().addSetHeaders(Gaie.set(Gaie.DESTINATION_ENDPOINT, destination));
    if (forward != null) {
      mutation.addSetHeaders(Gaie.set("content-length", Integer.toString(forward.length)));
    } else {
      forward = whole;
    }
    out.onNext(ProcessingResponse.newBuilder()
        .setRequestHeaders(HeadersResponse.newBuilder().setResponse(
            CommonResponse.newBuilder().setClearRouteCache(true).setHeaderMutation(mutation)))
        .setDynamicMetadata(Gaie.destinationMetadata(destination))
        .build());
    if (sendBody) {
      streamBody(forward, bodyEnds, true);
    }
  }

  /** Sends {@code bytes} back as streamed body responses (request or response side). */
  private void streamBody(byte[] bytes, boolean endOfStream, boolean request) {
    int offset = 0;
    do {
      int n = Math.min(bytes.length - offset, Gaie.MAX_STREAMED_CHUNK_BYTES);
      boolean last = offset + n >= bytes.length;
      sendBody(ByteString.copyFrom(bytes, offset, n), endOfStream && last, request);
      offset += n;
    } while (offset < bytes.length);
  }

  private void sendBody(ByteString bytes, boolean endOfStream, boolean request) {
    BodyResponse r = BodyResponse.newBuilder().setResponse(CommonResponse.newBuilder().setBodyMutation(
        BodyMutation.newBuilder().setStreamedResponse(
            StreamedBodyResponse.newBuilder().setBody(bytes).setEndOfStream(endOfStream)))).build();
    out.onNext(request ? ProcessingResponse.newBuilder().setRequestBody(r).build()
        : ProcessingResponse.newBuilder().setResponseBody(r).build());
  }

  private void onResponseHeaders(ProcessingRequest req) {
    HttpHeaders h = req.getResponseHeaders();
    Map<String, String> headers = Gaie.headers(h.getHeaders());
    HeaderMutation.Builder mutation = HeaderMutation.newBuilder();
    if (pick != null) {
      pick.served(Gaie.served(req.getMetadataContext()));
      pick.responseHeaders(status(headers.get(":status")), headers.get("content-type"));
      String backend = pick.backend();
      if (backend != null) {
        mutation.addSetHeaders(Gaie.set("x-kvroute-backend", backend));
      }
    }
    out.onNext(ProcessingResponse.newBuilder()
        .setResponseHeaders(HeadersResponse.newBuilder().setResponse(CommonResponse.newBuilder().setHeaderMutation(mutation)))
        .build());
    if (h.getEndOfStream() && pick != null) {
      pick.responseBody(java.nio.ByteBuffer.allocate(0), true);
    }
  }

  private static int status(String s) {
    if (s == null) {
      return 0;
    }
    try {
      return Integer.parseInt(s.trim());
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  private void onResponseBody(HttpBody chunk) {
    if (pick != null) {
      pick.responseBody(chunk.getBody().asReadOnlyByteBuffer(), chunk.getEndOfStream());
    }
    sendBody(chunk.getBody(), chunk.getEndOfStream(), false);
  }

  private void refuse(int status, String message, long retryAfterSeconds) {
    refused = true;
    body = null;
    String json = "{\"error\":{\"message\":" + jsonString(message) + ",\"type\":\"RequestTooLargeError\",\"param\":null,\"code\":"
        + status + "}}";
    out.onNext(Gaie.immediate(status, json.getBytes(StandardCharsets.UTF_8), retryAfterSeconds, "kvroute_epp_" + status));
  }

  private static String jsonString(String s) {
    return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }

  @Override
  public void onError(Throwable t) {
    end(); // cancelled or failed: Envoy's request went away
  }

  @Override
  public void onCompleted() {
    end();
    out.onCompleted();
  }

  private void end() {
    if (ended) {
      return;
    }
    ended = true;
    body = null;
    if (pick != null) {
      pick.cancel(); // no-op when the response already ended it
    }
    onEnd.run();
  }
}
