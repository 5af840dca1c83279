package dev.kvroute.epp;

import com.google.protobuf.ByteString;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.HeaderMap;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.config.core.v3.HeaderValueOption;
import io.envoyproxy.envoy.config.core.v3.Metadata;
import io.envoyproxy.envoy.service.ext_proc.v3.HeaderMutation;
import io.envoyproxy.envoy.service.ext_proc.v3.ImmediateResponse;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.envoyproxy.envoy.type.v3.HttpStatus;
import io.envoyproxy.envoy.type.v3.StatusCode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The names and shapes of the Gateway API Inference Extension's endpoint-picker protocol (GAIE
 * {@code docs/proposals/004-endpoint-picker-protocol}, v1.0.0): the destination header and its
 * {@code envoy.lb} dynamic-metadata twin, the subset hint the data plane may send, the served endpoint
 * it reports back, and the immediate responses that refuse a request.
 *
 * <p>Stateless and thread-safe.
 */
public final class Gaie {
  /** Header, and key in {@link #LB_NAMESPACE}, naming the picked endpoints ({@code ip:port[,ip:port...]}). */
  public static final String DESTINATION_ENDPOINT = "x-gateway-destination-endpoint";
  /** Namespace of the dynamic metadata carrying the picked endpoints, and of the served endpoint. */
  public static final String LB_NAMESPACE = "envoy.lb";
  /** Namespace of the filter metadata carrying the subset hint. */
  public static final String SUBSET_NAMESPACE = "envoy.lb.subset_hint";
  /** Key of the subset hint: a list of {@code ip:port} (or one comma-separated string). */
  public static final String SUBSET_KEY = "x-gateway-destination-endpoint-subset";
  /** Key, in {@link #LB_NAMESPACE} of a response's metadata context, of the endpoint that served it. */
  public static final String SERVED_KEY = "x-gateway-destination-endpoint-served";
  /** The gRPC health service names the protocol asks for. */
  public static final String LIVENESS = "liveness";
  /** Ready: the fleet is known (discovery listed it) and the picker is not draining. */
  public static final String READINESS = "readiness";
  /** The ext_proc service itself, as a health service name (same criteria as readiness). */
  public static final String EXT_PROC_SERVICE = "envoy.service.ext_proc.v3.ExternalProcessor";
  /**
   * Largest body piece per streamed body response: some Envoy builds cap a streamed chunk at 64 KiB, so
   * GAIE's reference EPP sends at most 62,000 bytes per message; kvroute does the same.
   */
  public static final int MAX_STREAMED_CHUNK_BYTES = 62_000;

  private Gaie() {}

  /** Headers by lowercase name (the last value of a repeated name), from raw values when Envoy sends them. */
  static Map<String, String> headers(HeaderMap map) {
    Map<String, String> out = new HashMap<>();
    for (HeaderValue h : map.getHeadersList()) {
      out.put(h.getKey().toLowerCase(Locale.ROOT), value(h));
    }
    return out;
  }

  private static String value(HeaderValue h) {
    return h.getRawValue().isEmpty() ? h.getValue() : h.getRawValue().toString(StandardCharsets.UTF_8);
  }

  /**
   * The subset hint of a request's metadata: {@code null} when the data plane set none, else the
   * listed endpoints (possibly empty, which allows none). Both a list of strings and one
   * comma-separated string are read, as data planes write either.
   */
  static List<String> subset(Metadata metadata) {
    Struct ns = metadata.getFilterMetadataMap().get(SUBSET_NAMESPACE);
    if (ns == null || !ns.containsFields(SUBSET_KEY)) {
      return null;
    }
    Value v = ns.getFieldsOrThrow(SUBSET_KEY);
    List<String> out = new ArrayList<>();
    if (v.hasListValue()) {
      for (Value e : v.getListValue().getValuesList()) {
        if (e.hasStringValue()) {
          split(e.getStringValue(), out);
        }
      }
    } else if (v.hasStringValue()) {
      split(v.getStringValue(), out);
    }
    return out;
  }

  private static void split(String s, List<String> out) {
    for (String p : s.split(",")) {
      if (!p.isBlank()) {
        out.add(p.trim());
      }
    }
  }

  /** The endpoint a response's metadata says served it, or {@code null}. */
  static String served(Metadata metadata) {
    Struct ns = metadata.getFilterMetadataMap().get(LB_NAMESPACE);
    if (ns == null || !ns.containsFields(SERVED_KEY)) {
      return null;
    }
    Value v = ns.getFieldsOrThrow(SERVED_KEY);
    return v.hasStringValue() ? v.getStringValue().trim() : null;
  }

  /** The dynamic metadata {@code {"envoy.lb": {"x-gateway-destination-endpoint": value}}}. */
  static Struct destinationMetadata(String value) {
    Struct inner = Struct.newBuilder()
        .putFields(DESTINATION_ENDPOINT, Value.newBuilder().setStringValue(value).build()).build();
    return Struct.newBuilder().putFields(LB_NAMESPACE, Value.newBuilder().setStructValue(inner).build()).build();
  }

  /** A header to set, overwriting any value the request had. */
  static HeaderValueOption set(String name, String value) {
    return HeaderValueOption.newBuilder()
        .setHeader(HeaderValue.newBuilder().setKey(name).setRawValue(ByteString.copyFromUtf8(value)))
        .setAppendAction(HeaderValueOption.HeaderAppendAction.OVERWRITE_IF_EXISTS_OR_ADD)
        .build();
  }

  /**
   * An immediate response refusing the request: {@code status} with a JSON body, and
   * {@code Retry-After} when {@code retryAfterSeconds >= 0}.
   */
  static ProcessingResponse immediate(int status, byte[] jsonBody, long retryAfterSeconds, String details) {
    HeaderMutation.Builder h = HeaderMutation.newBuilder().addSetHeaders(set("content-type", "application/json"));
    if (retryAfterSeconds >= 0) {
      h.addSetHeaders(set("retry-after", Long.toString(retryAfterSeconds)));
    }
    StatusCode code = StatusCode.forNumber(status);
    return ProcessingResponse.newBuilder()
        .setImmediateResponse(ImmediateResponse.newBuilder()
            .setStatus(HttpStatus.newBuilder().setCodeValue(code == null ? status : code.getNumber()))
            .setHeaders(h)
            .setBody(ByteString.copyFrom(jsonBody))
            .setDetails(details))
        .build();
  }
}
