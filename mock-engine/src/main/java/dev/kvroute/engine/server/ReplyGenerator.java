package dev.kvroute.engine.server;

import dev.kvroute.core.tokenize.SingleTokenVocabulary;
import dev.kvroute.engine.model.EngineRequest;
import java.util.SplittableRandom;

/**
 * Writes the mock engine's replies: words of a {@link SingleTokenVocabulary} (one token each), drawn
 * from a generator seeded by the server seed, the prompt's tokens, the request's {@code seed} field and
 * the choice index, so the same request gets the same reply on every run and every replica.
 *
 * <p>Length: with {@code ignore_eos} exactly {@code maxTokens} ({@code "length"}). Otherwise the reply
 * has a natural length drawn from a geometric distribution with mean {@code meanOutputTokens} (at
 * least 1), raised to {@code minTokens} and capped at {@code maxTokens}; it finishes with {@code
 * "stop"} when the natural length ended it before {@code maxTokens}, else {@code "length"}.
 *
 * <p>Immutable and thread-safe.
 */
final class ReplyGenerator {
  /** A reply: its token ids, the text of each token, and how it finishes. */
  record Reply(int[] tokenIds, String[] words, String finishReason) {}

  private final SingleTokenVocabulary vocabulary;
  private final long seed;
  private final double meanOutputTokens;

  ReplyGenerator(SingleTokenVocabulary vocabulary, long seed, double meanOutputTokens) {
    if (!(meanOutputTokens >= 1)) {
      throw new IllegalArgumentException("meanOutputTokens: " + meanOutputTokens + " (expected: >= 1)");
    }
    this.vocabulary = vocabulary;
    this.seed = seed;
    this.meanOutputTokens = meanOutputTokens;
  }

  Reply generate(
      int[] promptTokens, long requestSeed, int choice, int maxTokens, int minTokens, boolean ignoreEos) {
    long h = seed * 0x9E3779B97F4A7C15L + requestSeed;
    for (int t : promptTokens) {
      h = (h ^ t) * 0xff51afd7ed558ccdL;
      h ^= h >>> 31;
    }
    SplittableRandom rnd = new SplittableRandom(h * 31 + choice);
    int length = maxTokens;
    String reason = EngineRequest.LENGTH;
    if (!ignoreEos) {
      // Geometric with mean m: P(stop after each token) = 1/m.
      double u = rnd.nextDouble();
      double p = 1.0 / meanOutputTokens;
      long natural = p >= 1 ? 1 : 1 + (long) Math.floor(Math.log1p(-u) / Math.log1p(-p));
      natural = Math.max(natural, Math.max(1, minTokens));
      if (natural < maxTokens) {
        length = (int) natural;
        reason = EngineRequest.STOP;
      }
    }
    int[] ids = new int[length];
    String[] words = new String[length];
    int size = vocabulary.size();
    for (int i = 0; i < length; i++) {
      int w = rnd.nextInt(size);
      ids[i] = vocabulary.tokenId(w);
      words[i] = vocabulary.word(w);
    }
    return new Reply(ids, words, reason);
  }
}
