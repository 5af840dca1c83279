package dev.kvroute.bench.workload;

import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.PromptSegment;
import dev.kvroute.core.request.RequestView;
import java.util.List;

/**
 * A completion request with a token-id prompt in the two forms the bench needs: the JSON body the
 * open-loop load driver sends to {@code /v1/completions}, and the {@link RequestView} the router parses
 * from that body, which the simulator routes directly. The router and the engines use token-id prompts
 * as given, so all three see the same prompt tokens.
 *
 * <p>The body: {@code {"model", "prompt": [ids], "max_tokens", "ignore_eos": true, "stream": true,
 * "stream_options": {"include_usage": true}}}, plus {@code "user"} when the request has a session key
 * (the usage chunk carries {@code prompt_tokens_details.cached_tokens}).
 *
 * <p>Thread-safe (stateless).
 */
public final class CompletionRequests {
  private CompletionRequests() {}

  /** The routing view the router extracts from {@link #body}'s output. */
  public static RequestView view(String model, String sessionKey, int[] promptTokens, int maxTokens) {
    return new RequestView(
        Endpoint.COMPLETIONS, model, sessionKey, List.of(PromptSegment.tokens(promptTokens)), true, maxTokens);
  }

  /**
   * The UTF-8 JSON body of a streamed completion of {@code promptTokens}.
   *
   * @param sessionKey the {@code user} field, or {@code null} for none (must need no JSON escaping
   *     beyond ASCII letters, digits and {@code -_.:})
   * @throws IllegalArgumentException if {@code sessionKey} has other characters, or a token id is negative
   */
  public static byte[] body(String model, String sessionKey, int[] promptTokens, int maxTokens) {
    String head = "{\"model\":\"" + plain("model", model) + "\",\"prompt\":[";
    String tail =
        "],\"max_tokens\":" + maxTokens
            + ",\"ignore_eos\":true,\"stream\":true,\"stream_options\":{\"include_usage\":true}"
            + (sessionKey == null ? "" : ",\"user\":\"" + plain("sessionKey", sessionKey) + "\"")
            + "}";
    int size = head.length() + tail.length() + Math.max(0, promptTokens.length - 1);
    for (int i = 0; i < promptTokens.length; i++) {
      if (promptTokens[i] < 0) {
        throw new IllegalArgumentException(
            "promptTokens[" + i + "]: " + promptTokens[i] + " (expected: a non-negative token id)");
      }
      size += digits(promptTokens[i]);
    }
    byte[] out = new byte[size];
    int at = ascii(head, out, 0);
    for (int i = 0; i < promptTokens.length; i++) {
      if (i > 0) {
        out[at++] = ',';
      }
      int t = promptTokens[i];
      int n = digits(t);
      for (int j = at + n - 1; j >= at; j--) {
        out[j] = (byte) ('0' + t % 10);
        t /= 10;
      }
      at += n;
    }
    ascii(tail, out, at);
    return out;
  }

  /** Characters of the non-negative {@code v} in decimal. */
  private static int digits(int v) {
    int n = 1;
    while (v >= 10) {
      v /= 10;
      n++;
    }
    return n;
  }

  private static int ascii(String s, byte[] out, int at) {
    for (int i = 0; i < s.length(); i++) {
      out[at++] = (byte) s.charAt(i);
    }
    return at;
  }

  private static String plain(String name, String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      boolean ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
          || c == '-' || c == '_' || c == '.' || c == ':' || c == '/';
      if (!ok) {
        throw new IllegalArgumentException(
            name + ": " + s + " (expected: ASCII letters, digits and -_.:/ only)");
      }
    }
    return s;
  }
}
