package dev.kvroute.epp;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import com.google.protobuf.ListValue;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.HeaderMap;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.config.core.v3.HeaderValueOption;
import io.envoyproxy.envoy.config.core.v3.Metadata;
import io.envoyproxy.envoy.service.ext_proc.v3.ExternalProcessorGrpc;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpBody;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpHeaders;
import io.envoyproxy.envoy.service.ext_proc.v3.HttpTrailers;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingRequest;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.Channel;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Envoy's side of an {@code ext_proc} stream in FULL_DUPLEX_STREAMED mode, as a test client: request
 * headers (with an optional subset hint), the body in several chunks, then, after the picker's
 * answers, the upstream response's headers (with the served endpoint), its body as it streams, and
 * trailers. {@link #forward} plays the whole exchange against the picked engine over real HTTP.
 */
final class FakeEnvoy {
  static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();

  private final ExternalProcessorGrpc.ExternalProcessorStub stub;

  FakeEnvoy(Channel channel) {
    this.stub = ExternalProcessorGrpc.newStub(channel);
  }

  Exchange open() {
    Exchange x = new Exchange();
    x.requests = (ClientCallStreamObserver<ProcessingRequest>) stub.process(x.observer);
    return x;
  }

  /** What the picker decided for one request, as Envoy sees it. */
  record Route(ProcessingResponse headers, String destinationHeader, String destinationMetadata, Map<String, String> setHeaders,
      boolean clearRouteCache, byte[] body) {
    List<String> endpoints() {
      return List.of(destinationHeader.split(","));
    }
  }

  /** One whole exchange's outcome. */
  record Result(Route route, int status, byte[] upstreamBody, byte[] echoedBody) {
    String text() {
      return new String(upstreamBody, StandardCharsets.UTF_8);
    }
  }

  /**
   * Request headers, the body in {@code chunks} pieces, the picker's route; then the request over HTTP
   * to the first endpoint, its response streamed back through the picker (headers with the served
   * endpoint, each piece as it arrives, trailers), and the stream completed.
   */
  Result forward(String path, String body, Map<String, String> headers, int chunks, List<String> subset) throws Exception {
    Exchange x = open();
    x.requestHeaders(path, headers, subset, false);
    x.requestBodyInChunks(body.getBytes(StandardCharsets.UTF_8), chunks);
    Route route = x.route();
    String endpoint = route.endpoints().get(0);
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://" + endpoint + path))
        .timeout(Duration.ofSeconds(60))
        .header("content-type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofByteArray(route.body()));
    HttpResponse<InputStream> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofInputStream());
    x.responseHeaders(r.statusCode(), r.headers().firstValue("content-type").orElse(null), endpoint, false);
    ByteArrayOutputStream upstream = new ByteArrayOutputStream();
    try (InputStream in = r.body()) {
      byte[] buf = new byte[512];
      for (int n; (n = in.read(buf)) > 0; ) {
        upstream.write(buf, 0, n);
        x.responseBody(java.util.Arrays.copyOf(buf, n), false);
      }
    }
    x.responseBody(new byte[0], true);
    x.responseTrailers();
    x.complete();
    return new Result(route, r.statusCode(), upstream.toByteArray(), x.echoed.toByteArray());
  }

  static final class Exchange {
    final LinkedBlockingQueue<ProcessingResponse> responses = new LinkedBlockingQueue<>();
    final CountDownLatch closed = new CountDownLatch(1);
    final ByteArrayOutputStream echoed = new ByteArrayOutputStream();
    volatile Throwable error;
    ClientCallStreamObserver<ProcessingRequest> requests;
    final StreamObserver<ProcessingResponse> observer = new StreamObserver<>() {
      @Override
      public void onNext(ProcessingResponse value) {
        responses.add(value);
      }

      @Override
      public void onError(Throwable t) {
        error = t;
        closed.countDown();
      }

      @Override
      public void onCompleted() {
        closed.countDown();
      }
    };

    void requestHeaders(String path, Map<String, String> headers, List<String> subset, boolean endOfStream) {
      Map<String, String> all = new LinkedHashMap<>();
      all.put(":method", "POST");
      all.put(":path", path);
      all.put(":authority", "gateway.example");
      all.put("content-type", "application/json");
      all.putAll(headers);
      ProcessingRequest.Builder r = ProcessingRequest.newBuilder()
          .setRequestHeaders(HttpHeaders.newBuilder().setHeaders(map(all)).setEndOfStream(endOfStream));
      if (subset != null) {
        r.setMetadataContext(subsetMetadata(Value.newBuilder().setListValue(ListValue.newBuilder().addAllValues(
            subset.stream().map(s -> Value.newBuilder().setStringValue(s).build()).toList())).build()));
      }
      requests.onNext(r.build());
    }

    void requestHeadersWithMetadata(String path, Metadata metadata) {
      requests.onNext(ProcessingRequest.newBuilder()
          .setRequestHeaders(HttpHeaders.newBuilder().setHeaders(map(Map.of(":method", "POST", ":path", path))))
          .setMetadataContext(metadata).build());
    }

    static Metadata subsetMetadata(Value v) {
      return Metadata.newBuilder().putFilterMetadata(Gaie.SUBSET_NAMESPACE,
          Struct.newBuilder().putFields(Gaie.SUBSET_KEY, v).build()).build();
    }

    void requestBodyInChunks(byte[] body, int chunks) {
      int step = Math.max(1, (body.length + chunks - 1) / chunks);
      int off = 0;
      do {
        int n = Math.min(step, body.length - off);
        requestBody(java.util.Arrays.copyOfRange(body, off, off + n), off + n >= body.length);
        off += n;
      } while (off < body.length);
    }

    void requestBody(byte[] chunk, boolean endOfStream) {
      requests.onNext(ProcessingRequest.newBuilder()
          .setRequestBody(HttpBody.newBuilder().setBody(ByteString.copyFrom(chunk)).setEndOfStream(endOfStream)).build());
    }

    ProcessingResponse next() throws InterruptedException {
      ProcessingResponse r = responses.poll(30, TimeUnit.SECONDS);
      assertThat(r).as("a response from the picker within 30 s (error: %s)", error).isNotNull();
      return r;
    }

    /** The request-headers answer and the streamed body that follows it (up to its end). */
    Route route() throws InterruptedException {
      ProcessingResponse h = next();
      assertThat(h.hasRequestHeaders()).as("first answer is the request headers': %s", h).isTrue();
      Map<String, String> set = new LinkedHashMap<>();
      for (HeaderValueOption o : h.getRequestHeaders().getResponse().getHeaderMutation().getSetHeadersList()) {
        set.put(o.getHeader().getKey(), o.getHeader().getRawValue().toStringUtf8());
      }
      Struct lb = h.getDynamicMetadata().getFieldsOrThrow(Gaie.LB_NAMESPACE).getStructValue();
      ByteArrayOutputStream body = new ByteArrayOutputStream();
      while (true) {
        ProcessingResponse b = next();
        assertThat(b.hasRequestBody()).as("request body answer: %s", b).isTrue();
        var s = b.getRequestBody().getResponse().getBodyMutation().getStreamedResponse();
        assertThat(s.getBody().size()).isLessThanOrEqualTo(Gaie.MAX_STREAMED_CHUNK_BYTES);
        body.writeBytes(s.getBody().toByteArray());
        if (s.getEndOfStream()) {
          break;
        }
      }
      return new Route(h, set.get(Gaie.DESTINATION_ENDPOINT), lb.getFieldsOrThrow(Gaie.DESTINATION_ENDPOINT).getStringValue(),
          set, h.getRequestHeaders().getResponse().getClearRouteCache(), body.toByteArray());
    }

    void responseHeaders(int status, String contentType, String served, boolean endOfStream) throws InterruptedException {
      Map<String, String> h = new LinkedHashMap<>();
      h.put(":status", Integer.toString(status));
      if (contentType != null) {
        h.put("content-type", contentType);
      }
      ProcessingRequest.Builder r = ProcessingRequest.newBuilder()
          .setResponseHeaders(HttpHeaders.newBuilder().setHeaders(map(h)).setEndOfStream(endOfStream));
      if (served != null) {
        r.setMetadataContext(Metadata.newBuilder().putFilterMetadata(Gaie.LB_NAMESPACE, Struct.newBuilder()
            .putFields(Gaie.SERVED_KEY, Value.newBuilder().setStringValue(served).build()).build()));
      }
      requests.onNext(r.build());
      ProcessingResponse a = next();
      assertThat(a.hasResponseHeaders()).as("response headers answer: %s", a).isTrue();
    }

    void responseBody(byte[] chunk, boolean endOfStream) throws InterruptedException {
      requests.onNext(ProcessingRequest.newBuilder()
          .setResponseBody(HttpBody.newBuilder().setBody(ByteString.copyFrom(chunk)).setEndOfStream(endOfStream)).build());
      ProcessingResponse a = next();
      assertThat(a.hasResponseBody()).as("response body answer: %s", a).isTrue();
      var s = a.getResponseBody().getResponse().getBodyMutation().getStreamedResponse();
      assertThat(s.getEndOfStream()).isEqualTo(endOfStream);
      echoed.writeBytes(s.getBody().toByteArray());
    }

    void responseTrailers() throws InterruptedException {
      requests.onNext(ProcessingRequest.newBuilder().setResponseTrailers(HttpTrailers.getDefaultInstance()).build());
      assertThat(next().hasResponseTrailers()).isTrue();
    }

    void complete() throws InterruptedException {
      requests.onCompleted();
      assertThat(closed.await(30, TimeUnit.SECONDS)).as("stream closed").isTrue();
    }

    void cancel() {
      requests.cancel("client went away", null);
    }
  }

  static HeaderMap map(Map<String, String> headers) {
    HeaderMap.Builder m = HeaderMap.newBuilder();
    headers.forEach((k, v) -> m.addHeaders(HeaderValue.newBuilder().setKey(k).setRawValue(ByteString.copyFromUtf8(v))));
    return m.build();
  }
}
