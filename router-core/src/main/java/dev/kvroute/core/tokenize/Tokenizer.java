package dev.kvroute.core.tokenize;

/**
 * Turns text into token ids. Implementations must be deterministic (the same text always gives the
 * same ids) and thread-safe.
 */
public interface Tokenizer {
  /** The default encoding, OpenAI's {@code o200k_base} (GPT-4o), as bundled with jtokkit. */
  String DEFAULT_ENCODING = "o200k_base";

  /** The token ids of {@code text}, with no special tokens added. */
  int[] encode(String text);

  /**
   * The text of {@code tokenIds}; the inverse of {@link #encode} for ids it produced.
   *
   * @throws IllegalArgumentException if an id is not in the vocabulary
   */
  String decode(int[] tokenIds);

  /** A short stable name, e.g. {@code o200k_base}. */
  String name();

  /**
   * The pure-Java jtokkit tokenizer for a tiktoken encoding: {@code o200k_base} (default),
   * {@code cl100k_base}, {@code p50k_base} or {@code r50k_base}. Text that looks like a special
   * token (e.g. {@code <|endoftext|>}) is encoded as ordinary text. Instances are shared per
   * encoding: the first call for an encoding loads its vocabulary (about half a second for
   * {@code o200k_base}); later calls return the same instance.
   *
   * @throws IllegalArgumentException if jtokkit has no encoding of that name
   */
  static Tokenizer jtokkit(String encodingName) {
    return JtokkitTokenizer.forEncoding(encodingName);
  }

  /** {@link #jtokkit(String) jtokkit} with the {@link #DEFAULT_ENCODING default encoding}. */
  static Tokenizer defaultTokenizer() {
    return jtokkit(DEFAULT_ENCODING);
  }
}
