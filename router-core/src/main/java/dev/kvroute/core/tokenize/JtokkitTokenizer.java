package dev.kvroute.core.tokenize;

import com.knuddels.jtokkit.Encodings;
import com.knuddels.jtokkit.api.Encoding;
import com.knuddels.jtokkit.api.EncodingRegistry;
import com.knuddels.jtokkit.api.IntArrayList;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * {@link Tokenizer} over a jtokkit {@link Encoding}; thread-safe because jtokkit encodings are.
 *
 * <p>Long runs without whitespace: a run of more than {@value #MAX_RUN_CHARS} non-whitespace
 * characters (base64, minified code, a long URL, a repeated character) is cut every
 * {@value #MAX_RUN_CHARS} characters (never inside a surrogate pair) and each part encoded on its
 * own, because jtokkit's byte-pair merge on one huge pre-tokenized piece costs far more than linear
 * time: one 4 MB piece held a router thread for seconds. The ids may differ from the uncut encoding
 * next to each cut, an intentional approximation (docs/design-decisions.md); decoding still gives
 * the text back, and text whose runs are shorter is encoded exactly as jtokkit does.
 */
final class JtokkitTokenizer implements Tokenizer {
  /** Longest run of non-whitespace characters encoded as one piece. */
  static final int MAX_RUN_CHARS = 256;

  private static final EncodingRegistry REGISTRY = Encodings.newLazyEncodingRegistry();
  private static final ConcurrentHashMap<String, JtokkitTokenizer> INSTANCES =
      new ConcurrentHashMap<>();

  private final Encoding encoding;

  private JtokkitTokenizer(Encoding encoding) {
    this.encoding = encoding;
  }

  static JtokkitTokenizer forEncoding(String encodingName) {
    Objects.requireNonNull(encodingName, "encodingName");
    return INSTANCES.computeIfAbsent(
        encodingName,
        name ->
            new JtokkitTokenizer(
                REGISTRY
                    .getEncoding(name)
                    .orElseThrow(
                        () ->
                            new IllegalArgumentException(
                                "tokenizer: "
                                    + name
                                    + " (expected: o200k_base, cl100k_base, p50k_base or"
                                    + " r50k_base)"))));
  }

  @Override
  public int[] encode(String text) {
    int cut = nextCut(text, 0);
    if (cut < 0) {
      return encoding.encodeOrdinary(text).toArray();
    }
    IntArrayList ids = new IntArrayList(text.length() / 2);
    int from = 0;
    while (cut >= 0) {
      append(ids, encoding.encodeOrdinary(text.substring(from, cut)));
      from = cut;
      cut = nextCut(text, from);
    }
    append(ids, encoding.encodeOrdinary(text.substring(from)));
    return ids.toArray();
  }

  /**
   * The first position after {@code from} where a run of non-whitespace characters reaches
   * {@link #MAX_RUN_CHARS} characters since the run's start or {@code from}, whichever is later
   * (moved past a low surrogate so that a pair stays whole), or -1 if there is none.
   */
  static int nextCut(String text, int from) {
    int run = 0;
    for (int i = from; i < text.length(); i++) {
      if (Character.isWhitespace(text.charAt(i))) {
        run = 0;
      } else if (++run == MAX_RUN_CHARS) {
        int cut = i + 1;
        if (cut < text.length() && Character.isLowSurrogate(text.charAt(cut))) {
          cut++;
        }
        return cut < text.length() ? cut : -1;
      }
    }
    return -1;
  }

  private static void append(IntArrayList to, IntArrayList from) {
    for (int i = 0; i < from.size(); i++) {
      to.add(from.get(i));
    }
  }

  @Override
  public String decode(int[] tokenIds) {
    IntArrayList ids = new IntArrayList(tokenIds.length);
    for (int id : tokenIds) {
      ids.add(id);
    }
    try {
      return encoding.decode(ids);
    } catch (RuntimeException e) {
      // jtokkit reports an id outside the vocabulary with a NullPointerException.
      throw new IllegalArgumentException("tokenIds: " + e.getMessage(), e);
    }
  }

  @Override
  public String name() {
    return encoding.getName();
  }

  @Override
  public String toString() {
    return "jtokkit:" + name();
  }
}
