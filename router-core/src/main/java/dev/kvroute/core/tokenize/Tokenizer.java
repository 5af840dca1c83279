package dev.kvroute.core.tokenize;

/**
 * Turns text into token ids. Implementations must be deterministic (the same text always gives the
 * same ids) and thread-safe.
 */
public interface Tokenizer {
  /** The token ids of {@code text}, with no special tokens added. */
  int[] encode(String text);

  /** The text of {@code tokenIds}; the inverse of {@link #encode} for ids it produced. */
  String decode(int[] tokenIds);

  /** A short stable name, e.g. {@code o200k_base}. */
  String name();
}
