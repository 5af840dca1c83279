package dev.kvroute.core.tokenize;

import com.knuddels.jtokkit.Encodings;
import com.knuddels.jtokkit.api.Encoding;
import com.knuddels.jtokkit.api.EncodingRegistry;
import com.knuddels.jtokkit.api.IntArrayList;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/** {@link Tokenizer} over a jtokkit {@link Encoding}; thread-safe because jtokkit encodings are. */
final class JtokkitTokenizer implements Tokenizer {
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
    return encoding.encodeOrdinary(text).toArray();
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
