package dev.kvroute.core.tokenize;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.random.RandomGenerator;

/** {@link SingleTokenVocabulary} held in two parallel arrays and an id-to-index map. */
final class DefaultSingleTokenVocabulary implements SingleTokenVocabulary {
  /** Decoding stops after this many consecutive ids the tokenizer rejects (end of vocabulary). */
  private static final int MAX_CONSECUTIVE_UNKNOWN_IDS = 4096;

  private static final int MIN_WORDS = 1000;
  private static final int MIN_LETTERS = 2;
  private static final int MAX_LETTERS = 16;

  private static final ConcurrentHashMap<Tokenizer, SingleTokenVocabulary> SHARED =
      new ConcurrentHashMap<>();

  private final String[] words;
  private final int[] ids;
  private final Map<Integer, Integer> indexById;

  private DefaultSingleTokenVocabulary(String[] words, int[] ids) {
    this.words = words;
    this.ids = ids;
    this.indexById = new HashMap<>(ids.length * 2);
    for (int i = 0; i < ids.length; i++) {
      indexById.put(ids[i], i);
    }
  }

  static SingleTokenVocabulary of(Tokenizer tokenizer) {
    Objects.requireNonNull(tokenizer, "tokenizer");
    if (tokenizer instanceof JtokkitTokenizer || tokenizer instanceof HfTokenizer) {
      return SHARED.computeIfAbsent(tokenizer, DefaultSingleTokenVocabulary::build);
    }
    return build(tokenizer);
  }

  private static SingleTokenVocabulary build(Tokenizer tokenizer) {
    String[] words = new String[1024];
    int[] ids = new int[1024];
    int n = 0;
    int unknownRun = 0;
    int[] one = new int[1];
    for (int id = 0; unknownRun < MAX_CONSECUTIVE_UNKNOWN_IDS && id >= 0; id++) {
      String text;
      one[0] = id;
      try {
        text = tokenizer.decode(one);
      } catch (RuntimeException unknownId) {
        unknownRun++;
        continue;
      }
      unknownRun = 0;
      if (!isCandidate(text)) {
        continue;
      }
      int[] back = tokenizer.encode(text);
      if (back.length != 1 || back[0] != id) {
        continue;
      }
      if (n == words.length) {
        words = Arrays.copyOf(words, n * 2);
        ids = Arrays.copyOf(ids, n * 2);
      }
      words[n] = text;
      ids[n] = id;
      n++;
    }
    if (n < MIN_WORDS) {
      throw new IllegalArgumentException(
          "tokenizer: "
              + tokenizer.name()
              + " has "
              + n
              + " single-token words (expected: at least "
              + MIN_WORDS
              + ")");
    }
    return new DefaultSingleTokenVocabulary(Arrays.copyOf(words, n), Arrays.copyOf(ids, n));
  }

  /** A space followed by 2..16 lowercase ASCII letters. */
  private static boolean isCandidate(String text) {
    int len = text.length();
    if (len < 1 + MIN_LETTERS || len > 1 + MAX_LETTERS || text.charAt(0) != ' ') {
      return false;
    }
    for (int i = 1; i < len; i++) {
      char c = text.charAt(i);
      if (c < 'a' || c > 'z') {
        return false;
      }
    }
    return true;
  }

  @Override
  public int size() {
    return words.length;
  }

  @Override
  public String word(int index) {
    Objects.checkIndex(index, words.length);
    return words[index];
  }

  @Override
  public int tokenId(int index) {
    Objects.checkIndex(index, ids.length);
    return ids[index];
  }

  @Override
  public int indexOfToken(int tokenId) {
    Integer i = indexById.get(tokenId);
    return i == null ? -1 : i;
  }

  @Override
  public String randomText(int tokens, RandomGenerator rng) {
    if (tokens < 0) {
      throw new IllegalArgumentException("tokens: " + tokens + " (expected: >= 0)");
    }
    StringBuilder sb = new StringBuilder(tokens * 8);
    for (int i = 0; i < tokens; i++) {
      sb.append(words[rng.nextInt(words.length)]);
    }
    return sb.toString();
  }

  @Override
  public String text(int... indices) {
    StringBuilder sb = new StringBuilder(indices.length * 8);
    for (int i : indices) {
      sb.append(word(i));
    }
    return sb.toString();
  }

  @Override
  public int[] tokenIds(int... indices) {
    int[] out = new int[indices.length];
    for (int k = 0; k < indices.length; k++) {
      out[k] = tokenId(indices[k]);
    }
    return out;
  }

  @Override
  public String toString() {
    return "SingleTokenVocabulary[" + words.length + " words]";
  }
}
