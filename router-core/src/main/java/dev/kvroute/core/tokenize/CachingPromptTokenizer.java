package dev.kvroute.core.tokenize;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.PromptSegment;
import dev.kvroute.core.request.RequestView;
import java.util.List;
import java.util.Objects;

/** {@link PromptTokenizer} with a Caffeine piece cache bounded by estimated bytes. */
final class CachingPromptTokenizer implements PromptTokenizer {
  private static final int PIECE_OVERHEAD_BYTES = 64;
  private static final int[] NO_TOKENS = new int[0];

  private final Tokenizer tokenizer;
  private final Cache<String, int[]> cache;
  private final int[] imEnd;
  private final int[] generationPrompt;

  CachingPromptTokenizer(Tokenizer tokenizer, long maxCacheBytes) {
    this.tokenizer = Objects.requireNonNull(tokenizer, "tokenizer");
    if (maxCacheBytes < 0) {
      throw new IllegalArgumentException(
          "maxCacheBytes: " + maxCacheBytes + " (expected: >= 0)");
    }
    this.cache =
        Caffeine.newBuilder()
            .maximumWeight(maxCacheBytes)
            .weigher(CachingPromptTokenizer::weigh)
            .executor(Runnable::run)
            .build();
    this.imEnd = tokenizer.encode(IM_END);
    this.generationPrompt = tokenizer.encode(GENERATION_PROMPT);
  }

  private static int weigh(String piece, int[] tokens) {
    long bytes = 2L * piece.length() + 4L * tokens.length + PIECE_OVERHEAD_BYTES;
    return (int) Math.min(Integer.MAX_VALUE, bytes);
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
        String role = s.role() == null ? "user" : s.role();
        pieces[n++] = cached(IM_START + role + "\n");
        pieces[n++] = s.isTokens() ? s.tokenIds() : cached(s.text());
        pieces[n++] = imEnd;
        total += pieces[n - 3].length + pieces[n - 2].length + imEnd.length;
      } else {
        pieces[n] = s.isTokens() ? s.tokenIds() : cached(s.text());
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

  @Override
  public int[] encode(String piece) {
    return cached(piece).clone();
  }

  private int[] cached(String piece) {
    if (piece.isEmpty()) {
      return NO_TOKENS;
    }
    return cache.get(piece, tokenizer::encode);
  }

  @Override
  public Tokenizer tokenizer() {
    return tokenizer;
  }

  @Override
  public long cachedPieces() {
    cache.cleanUp();
    return cache.estimatedSize();
  }
}
