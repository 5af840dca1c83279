package dev.kvroute.core.tokenize;

import java.util.random.RandomGenerator;

/**
 * Words that each encode to exactly one token, for generating text whose token count is known
 * without tokenizing it: every word is a space followed by 2 to 16 lowercase ASCII letters (e.g.
 * {@code " the"}), encodes to a single token id, and decodes back to itself. Because tiktoken-style
 * encodings split text before every space-led word, any concatenation of these words encodes to
 * exactly the concatenation of their ids: {@code n} words are {@code n} tokens.
 *
 * <p>The mock engine writes its output text with these words (so a client that sends the reply
 * back in the next turn makes the engine see its own generated tokens as a prefix), and the
 * workload generator writes synthetic user text with them.
 *
 * <p>Words are ordered by token id, so index {@code i} means the same word on every run with the
 * same tokenizer. Immutable and thread-safe.
 */
public interface SingleTokenVocabulary {
  /** Number of words; several tens of thousands for {@code o200k_base} and {@code cl100k_base}. */
  int size();

  /**
   * The word at {@code index}, with its leading space.
   *
   * @throws IndexOutOfBoundsException unless {@code 0 <= index < size()}
   */
  String word(int index);

  /**
   * The single token id of {@link #word(int) word(index)}.
   *
   * @throws IndexOutOfBoundsException unless {@code 0 <= index < size()}
   */
  int tokenId(int index);

  /** The index of the word whose token id is {@code tokenId}, or {@code -1} if none is. */
  int indexOfToken(int tokenId);

  /**
   * A text of exactly {@code tokens} tokens: that many words drawn uniformly from {@code rng},
   * concatenated. Empty for {@code 0}.
   *
   * @throws IllegalArgumentException if {@code tokens} is negative
   */
  String randomText(int tokens, RandomGenerator rng);

  /**
   * The concatenation of the words at {@code indices}; it encodes to their token ids in order.
   *
   * @throws IndexOutOfBoundsException if an index is out of range
   */
  String text(int... indices);

  /** The token ids of the words at {@code indices}, in order. */
  int[] tokenIds(int... indices);

  /**
   * The vocabulary of {@code tokenizer}, built by decoding every id of its vocabulary and keeping
   * the words that re-encode to that one id (about half a second for {@code o200k_base}; the result
   * for a shared {@link Tokenizer#jtokkit jtokkit} tokenizer is built once and reused).
   *
   * @throws IllegalArgumentException if the tokenizer yields fewer than 1,000 such words
   */
  static SingleTokenVocabulary of(Tokenizer tokenizer) {
    return DefaultSingleTokenVocabulary.of(tokenizer);
  }
}
