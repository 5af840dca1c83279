package dev.kvroute.proxy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.handler.codec.http.HttpHeaders;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * The router's {@code GET /v1/models}: every routable backend is asked for its {@code /v1/models} and
 * the {@code data} lists are merged in backend order, the first occurrence of each model {@code id}
 * winning; the answer is OpenAI's list shape {@code {"object":"list","data":[...]}}. A backend that
 * fails, times out, answers a non-2xx status or a body that is not JSON contributes nothing.
 * {@link ProxyHandler} writes the result (502 when no backend answered).
 *
 * <p>Immutable once built; thread-safe.
 */
final class ModelList {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final ObjectNode merged;
  private final int answered;

  private ModelList(ObjectNode merged, int answered) {
    this.merged = merged;
    this.answered = answered;
  }

  /**
   * Asks each of {@code backends} for {@code /v1/models} with {@code headers} (the client's
   * {@code Authorization}), each within the health-check timeout plus the connect timeout.
   *
   * @return the merge once every backend has answered or failed; never completes exceptionally
   */
  static CompletableFuture<ModelList> ask(ProxyContext px, List<Backend> backends, HttpHeaders headers) {
    List<CompletableFuture<ControlClient.Response>> answers = new ArrayList<>();
    for (Backend b : backends) {
      answers.add(px.control().get(b.config(), "/v1/models", headers, px.config().healthCheck().timeout()
          .plus(px.config().timeouts().connect())));
    }
    return CompletableFuture.allOf(answers.toArray(CompletableFuture[]::new)).handle((x, e) -> {
      List<ControlClient.Response> done = new ArrayList<>();
      for (CompletableFuture<ControlClient.Response> a : answers) {
        done.add(a.isCompletedExceptionally() ? null : a.join());
      }
      return merge(done);
    });
  }

  /** Merges backends' answers, in order; a {@code null} stands for a backend that failed. */
  static ModelList merge(List<ControlClient.Response> answers) {
    ObjectNode merged = JSON.createObjectNode();
    merged.put("object", "list");
    ArrayNode data = merged.putArray("data");
    Set<String> ids = new HashSet<>();
    int answered = 0;
    for (ControlClient.Response r : answers) {
      if (r == null || !r.ok()) {
        continue;
      }
      try {
        JsonNode models = JSON.readTree(r.body()).path("data");
        answered++;
        for (JsonNode m : models) {
          if (ids.add(m.path("id").asText())) {
            data.add(m);
          }
        }
      } catch (IOException ignored) {
        // a backend answering garbage contributes nothing
      }
    }
    return new ModelList(merged, answered);
  }

  /** Whether at least one backend answered with a JSON body. */
  boolean anyAnswered() {
    return answered > 0;
  }

  /** The merged list as JSON text. */
  String json() {
    return merged.toString();
  }
}
