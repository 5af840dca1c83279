package dev.kvroute.proxy;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.kvroute.core.request.TextHash;
import java.util.Arrays;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The engine's {@code /tokenize} answers the router has seen, so that a request seen before, or the
 * next turn of a conversation, is not sent to the engine again.
 *
 * <p><b>What is cached.</b> One entry per answer: the key of the whole request ({@link
 * EngineTokenRequest#key()}: model, endpoint, the rendering fields and every message, byte for byte)
 * maps to the token ids the engine returned for exactly that request. Nothing else is stored: no
 * per-message pieces, since a chat template may render a message differently depending on what
 * follows it (Qwen3 drops the reasoning of assistant turns before the last user message and closes a
 * run of tool results only at its end; every template ends with a generation prompt that the next
 * turn replaces with the assistant's message).
 *
 * <p><b>What is reused, and why it is correct.</b>
 *
 * <ul>
 *   <li><i>Exact</i>: a request whose key is cached gets the cached tokens. The engine's answer is a
 *       function of the {@code /tokenize} body, which is a function of the bytes the key covers, so
 *       the tokens are the ones a new call would return (up to the key's collision bound, see {@link
 *       TextHash}; a template that prints the date, {@code strftime_now}, is the exception, bounded
 *       by the entry's life in the cache).
 *   <li><i>Prefix</i> (chat only): the next turn of a conversation. A request that ends with a
 *       {@code user} message, whose first {@code j} messages were tokenized before as a whole request
 *       (same model and rendering fields) that ended with a {@code user} message, whose message
 *       {@code j + 1} is the {@code assistant}'s, and whose messages after the first {@code j} are at
 *       most {@code reuse} of its message bytes, gets the
 *       leading {@code length - margin} tokens of that earlier answer and no call. The tail is left
 *       out: the router routes on a prefix of the prompt, which only lowers the matched lengths it
 *       sees (never raises one). Only this shape is reused because only there do the usual
 *       templates leave everything before the generation prompt alone: both requests end with a
 *       user query, so no assistant turn of either comes after its last query (Qwen3 prints an
 *       assistant's reasoning only after it) and no run of tool results is open at the cached end
 *       (Qwen3 closes one only at its end). Every other shape (a request ending in tool results,
 *       say) is asked for, and teaches nothing.
 *   <li>{@code margin} is learned from the engine itself, per model and rendering fields: whenever a
 *       call is made for such a next turn, the tokens the two answers share are counted, and {@code
 *       margin} becomes the most tokens that an earlier answer's end ever lost to its continuation
 *       (for ChatML, the generation prompt; for Qwen3 without thinking, also its empty think block).
 *       Until one observation, nothing is reused. Every later call checks again; an observation
 *       beyond the margin in use raises it and is counted ({@link #corrections()}), since a reuse
 *       before it could have ended in that many tokens the engine renders otherwise.
 * </ul>
 *
 * <p>Bounded by an estimate of its heap bytes ({@code 4 × tokens + 64} per entry).
 *
 * <p>Thread-safe.
 */
final class EngineTokenCache {
  /** How a lookup was answered. */
  enum Kind {
    /** The whole request was tokenized before: its tokens, exactly. */
    EXACT,
    /** A prefix of the conversation was: the stable part of that answer (a prefix of the prompt). */
    PREFIX,
    /** Ask the engine. */
    MISS
  }

  /**
   * A lookup's answer.
   *
   * @param kind how it was answered
   * @param tokens the tokens to route on ({@code EXACT}, {@code PREFIX}), else {@code null}
   * @param earlier on a miss, the longest cached answer for a prefix of the conversation (to learn the
   *     model's margin from when the engine answers), else {@code null}
   */
  record Lookup(Kind kind, int[] tokens, int[] earlier, int earlierMessages) {
    Lookup(Kind kind, int[] tokens, int[] earlier) {
      this(kind, tokens, earlier, 0);
    }
  }

  private final Cache<TextHash, int[]> entries;
  private final double reuse;
  private final ConcurrentHashMap<TextHash, Integer> margins = new ConcurrentHashMap<>();
  private final AtomicLong corrections = new AtomicLong();

  /**
   * @param maxBytes the cache's bound in estimated heap bytes; {@code 0} caches nothing
   * @param reuse the largest share of a request's message bytes that may be new for a prefix reuse
   *     ({@code 0} turns prefix reuse off)
   */
  EngineTokenCache(long maxBytes, double reuse) {
    this.entries = Caffeine.newBuilder()
        .maximumWeight(maxBytes)
        .<TextHash, int[]>weigher((k, v) -> (int) Math.min(Integer.MAX_VALUE, 4L * v.length + 64))
        .build();
    this.reuse = reuse;
  }

  /** The cached tokens for {@code r} (exact, or a stable prefix), or a miss. */
  Lookup lookup(EngineTokenRequest r) {
    int[] exact = entries.getIfPresent(r.key());
    if (exact != null) {
      return new Lookup(Kind.EXACT, exact, null);
    }
    if (!r.chat()) {
      return new Lookup(Kind.MISS, null, null);
    }
    TextHash[] keys = r.prefixKeys();
    for (int j = keys.length - 2; j >= 0; j--) {
      if (!nextTurn(r, j)) {
        continue;
      }
      int[] earlier = entries.getIfPresent(keys[j]);
      if (earlier == null) {
        continue;
      }
      Integer margin = margins.get(r.head());
      long total = r.prefixBytes()[keys.length - 1];
      double newShare = (total - r.prefixBytes()[j]) / (double) Math.max(1, total);
      if (margin != null && newShare <= reuse && earlier.length > margin) {
        return new Lookup(Kind.PREFIX, Arrays.copyOf(earlier, earlier.length - margin), null);
      }
      return new Lookup(Kind.MISS, null, earlier, j + 1);
    }
    return new Lookup(Kind.MISS, null, null);
  }

  /**
   * Whether the request is a next turn after its first {@code j + 1} messages: message {@code j} is a
   * user's, the next one the assistant's, and the request ends with a user message (so every assistant
   * turn after message {@code j} comes before the request's last user query).
   */
  private static boolean nextTurn(EngineTokenRequest r, int j) {
    String[] roles = r.roles();
    return roles[j].equals("user") && roles[j + 1].equals("assistant") && roles[roles.length - 1].equals("user");
  }

  /**
   * Stores the engine's {@code tokens} for {@code r} and, when {@code miss} found an earlier answer
   * for the previous turn of the same conversation, learns the margin from the two.
   */
  void store(EngineTokenRequest r, int[] tokens, Lookup miss) {
    entries.put(r.key(), tokens);
    if (miss != null && miss.earlier() != null) {
      int[] earlier = miss.earlier();
      int shared = Arrays.mismatch(earlier, tokens);
      int lost = shared < 0 ? 0 : earlier.length - shared;
      Integer before = margins.get(r.head());
      margins.merge(r.head(), lost, Math::max);
      if (before != null && lost > before) {
        corrections.incrementAndGet();
      }
    }
  }

  /** The margin learned for {@code r}'s model and rendering fields, or -1 before the first observation. */
  int margin(EngineTokenRequest r) {
    Integer m = margins.get(r.head());
    return m == null ? -1 : m;
  }

  /** Observations that raised a margin already in use. */
  long corrections() {
    return corrections.get();
  }

  /** Entries held (approximate). */
  long size() {
    return entries.estimatedSize();
  }
}
