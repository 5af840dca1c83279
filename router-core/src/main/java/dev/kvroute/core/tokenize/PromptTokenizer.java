package dev.kvroute.core.tokenize;

import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.PromptSegment;
import dev.kvroute.core.request.RequestView;
import java.util.List;

/**
 * Turns a request's prompt into the token ids that the router's prefix index, the mock engine and
 * the simulator all see, so the three agree on every request.
 *
 * <p>Rendering:
 *
 * <ul>
 *   <li>Chat ({@link Endpoint#CHAT_COMPLETIONS}): a ChatML-style template. Every message renders as
 *       {@code encode("<|im_start|>" + role + "\n") + encode(text) + encode("<|im_end|>\n")}, each
 *       of the three pieces encoded separately, and the prompt ends with the generation prompt
 *       {@code encode("<|im_start|>assistant\n")}. The markers are encoded as ordinary text.
 *   <li>Completions and SGLang {@code /generate}: each segment's text encoded as is; token-id
 *       segments used as given. Segments are concatenated in order.
 * </ul>
 *
 * <p>Every text piece (role header, message text, completion prompt) is encoded once and kept in a
 * bounded cache keyed by the {@link TextHash} of its text, so a multi-turn request with a long
 * history only encodes its newest message, and a hit needs neither the text nor a comparison with
 * it: a segment parsed from a request body is hashed in place and decoded only on a miss. Two
 * different pieces of up to a megabyte share a key with probability below {@code 10^-26} (the
 * bound is in {@link TextHash}); the cache holds no text. It is bounded by an estimate of its heap bytes
 * ({@code 4 × tokens + 128} per piece). The headers of the common roles and the fixed markers are
 * encoded once at construction.
 *
 * <p>Thread-safe.
 */
public interface PromptTokenizer {
  /** Start of a message's role header in the chat template. */
  String IM_START = "<|im_start|>";

  /** End-of-message marker in the chat template, including its newline. */
  String IM_END = "<|im_end|>\n";

  /** The generation prompt that ends every chat prompt. */
  String GENERATION_PROMPT = IM_START + "assistant\n";

  /** Default bound of the piece cache: 64 MiB. */
  long DEFAULT_CACHE_BYTES = 64L << 20;

  /** The prompt tokens of {@code view}, rendered as described in the type's documentation. */
  int[] tokenize(RequestView view);

  /**
   * The prompt tokens of {@code view}, as {@link #tokenize(RequestView)}, with the page hashes an
   * earlier prompt of the same leading messages left for them ({@link PrefixedTokens}). The default
   * knows none; the piece-cache tokenizer ({@link #create}) keeps chat prompts by their messages.
   */
  default PrefixedTokens tokenizePrefixed(RequestView view) {
    return PrefixedTokens.of(tokenize(view));
  }

  /**
   * How much of {@code view}'s text {@link #tokenizePrefixed} would encode afresh, in code points:
   * the messages after the longest kept prompt of its leading messages whose pieces are not cached
   * either. A conversation's next turn is a few hundred; its first turn, or a long new paste, is its
   * whole size. The proxy routes a prompt with much to encode off its event loop. The default (a
   * tokenizer that cannot tell) answers {@code 0}. Thread-safe where the tokenizer is.
   */
  default long uncachedCodePoints(RequestView view) {
    return 0;
  }

  /**
   * What routing can know of {@code view}'s prompt without encoding any new text ({@link KnownLead}):
   * the tokens of the longest kept prompt its leading messages start with, and its estimated length.
   * The proxy routes a prompt with much text to encode on this when its encoding would have to wait,
   * and encodes it after forwarding it. {@code null} (the default): the tokenizer cannot tell, and such
   * a prompt is routed only once encoded. Thread-safe where the tokenizer is.
   */
  default KnownLead knownLead(RequestView view) {
    return null;
  }

  /**
   * Whether tokenizing a chat prompt asks for every message's {@link
   * dev.kvroute.core.request.PromptSegment#textHash} (so a parser had better hash while it reads).
   * The default: yes. The piece-cache tokenizer ({@link #create}) asks only for the messages after
   * the conversation's kept prompt, which it finds by comparing bytes.
   */
  default boolean asksForMessageHashes() {
    return true;
  }

  /** The prompt tokens of {@code segments} as {@code endpoint} renders them. */
  int[] tokenize(Endpoint endpoint, List<PromptSegment> segments);

  /** The tokens of one text piece, through the cache. The returned array is the caller's own. */
  int[] encode(String piece);

  /** The underlying tokenizer. */
  Tokenizer tokenizer();

  /** Text pieces currently in the cache (not counting the fixed markers); for metrics and tests. */
  long cachedPieces();

  /** A prompt tokenizer over {@code tokenizer} with a {@link #DEFAULT_CACHE_BYTES} piece cache. */
  static PromptTokenizer create(Tokenizer tokenizer) {
    return create(tokenizer, DEFAULT_CACHE_BYTES);
  }

  /**
   * A prompt tokenizer over {@code tokenizer} whose piece cache holds at most about
   * {@code maxCacheBytes} of heap; {@code 0} disables caching.
   *
   * @throws IllegalArgumentException if {@code maxCacheBytes} is negative
   */
  static PromptTokenizer create(Tokenizer tokenizer, long maxCacheBytes) {
    return new CachingPromptTokenizer(tokenizer, maxCacheBytes);
  }
}
