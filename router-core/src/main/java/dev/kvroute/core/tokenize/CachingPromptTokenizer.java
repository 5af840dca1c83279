package dev.kvroute.core.tokenize;

import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.PromptSegment;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.core.request.TextHash;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * {@link PromptTokenizer} with a Caffeine piece cache keyed by {@link TextHash} and bounded by
 * estimated bytes. A piece's text is asked for (and, for a segment parsed from a body, decoded) only
 * on a miss.
 */
final class CachingPromptTokenizer implements PromptTokenizer {
  private static final List<String> COMMON_ROLES =
      List.of("system", "developer", "user", "assistant", "tool", "function");

  private final Tokenizer tokenizer;
  private final PieceCache cache;
  private final Map<String, int[]> commonHeaders;
  private final int[] imEnd;
  private final int[] generationPrompt;

  CachingPromptTokenizer(Tokenizer tokenizer, long maxCacheBytes) {
    this.tokenizer = Objects.requireNonNull(tokenizer, "tokenizer");
    this.cache = new PieceCache(maxCacheBytes);
    Map<String, int[]> headers = new java.util.HashMap<>();
    for (String role : COMMON_ROLES) {
      headers.put(role, tokenizer.encode(header(role)));
    }
    this.commonHeaders = Map.copyOf(headers);
    this.imEnd = tokenizer.encode(IM_END);
    this.generationPrompt = tokenizer.encode(GENERATION_PROMPT);
  }

  private static String header(String role) {
    return IM_START + role + "\n";
  }

  @Override
  public int[] tokenize(RequestView view) {
    return tokenize(view.endpoint(), view.segments());
  }

  @Override
  public int[] tokenize(Endpoint endpoint, List<PromptSegment> segments) {
    boolean chat = endpoint == Endpoint.CHAT_COMPLETIONS;
    int pieceCount = chat ? 3 * segments.size() + 1 : segments.size();
    int[][] pieces = new int[pieceCount][];
    int n = 0;
    long total = 0;
    for (PromptSegment s : segments) {
      if (chat) {
        pieces[n++] = headerTokens(s.role() == null ? "user" : s.role());
        pieces[n++] = tokens(s);
        pieces[n++] = imEnd;
        total += pieces[n - 3].length + pieces[n - 2].length + imEnd.length;
      } else {
        pieces[n] = tokens(s);
        total += pieces[n++].length;
      }
    }
    if (chat) {
      pieces[n++] = generationPrompt;
      total += generationPrompt.length;
    }
    if (total > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException("prompt: " + total + " tokens (expected: fewer than 2^31)");
    }
    int[] out = new int[(int) total];
    int at = 0;
    for (int[] p : pieces) {
      System.arraycopy(p, 0, out, at, p.length);
      at += p.length;
    }
    return out;
  }

  /** A segment's tokens: its ids as given, or its text's tokens through the cache. */
  private int[] tokens(PromptSegment s) {
    if (s.isTokens()) {
      return s.tokenIds();
    }
    return cache.get(s.textHash(), k -> tokenizer.encode(s.text()));
  }

  private int[] headerTokens(String role) {
    int[] common = commonHeaders.get(role);
    if (common != null) {
      return common;
    }
    String header = header(role);
    return cache.get(TextHash.of(header), k -> tokenizer.encode(header));
  }

  @Override
  public int[] encode(String piece) {
    return cache.encode(tokenizer, piece);
  }

  @Override
  public Tokenizer tokenizer() {
    return tokenizer;
  }

  @Override
  public long cachedPieces() {
    return cache.size();
  }
}
