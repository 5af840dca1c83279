package dev.kvroute.core.tokenize;

import dev.kvroute.core.index.PageHashes;
import dev.kvroute.core.index.SegmentedTokens;
import dev.kvroute.core.request.KeptSegment;
import dev.kvroute.core.request.PromptSegment;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;

/**
 * The chat prompts a {@link CachingPromptTokenizer} assembled, keyed by their whole messages, so that
 * the next turn of a conversation (the same messages plus new ones) shares their tokens ({@link
 * SegmentedTokens}: the arrays, not a copy) and takes their page hashes instead of looking up every message's pieces and hashing every page again.
 *
 * <p>Key: a 128-bit chain over the messages, in order, of each message's role and text {@link
 * PromptSegment#fingerprint} (a few of its bytes and its length, not all of it), plus the message
 * count. Each step mixes the fingerprints into two 64-bit lanes with different multipliers and
 * rotations (xxHash's primes and rounds). A key only finds a candidate: the entry keeps its messages
 * ({@link KeptSegment}s in the cache's {@link KeptSegment.Form}: copies of their bytes, or their
 * lengths and keyed digests) and a candidate is taken only if every one of them matches the
 * request's ({@link Entry#holds}): byte for byte, or by a keyed digest of the request's bytes (a
 * different string passes with probability about {@code 2^-64}, {@link
 * dev.kvroute.core.request.BytesDigest}; the form where 512-bit vectors make it cheaper). So
 * reading a 22 KB conversation costs a comparison or a digest of its bytes (vectorized) rather than
 * a hash of all of them, and two conversations that share a key, by chance or by design, do not share
 * tokens (up to that bound): the later one's is a miss and replaces the other.
 *
 * <p>Value: the prompt's tokens (arrays shared with the routed request and with the turns before
 * and after it, never written; one flat array once anything assembled it), how many of its tokens
 * are its messages' (the rest is the generation prompt), the page hashes the prefix index computed
 * for it, and its messages. Bounded by an estimate of heap bytes: {@code 4 × tokens + }the page
 * hashes' bytes {@code + }the kept messages' bytes ({@link KeptSegment#heldBytes}) {@code + }{@value #ENTRY_OVERHEAD_BYTES} per prompt
 * and {@value #MESSAGE_OVERHEAD_BYTES} per message (a conversation's turns share their earlier
 * messages' copies and token arrays, so this overcounts); the least recently used prompts go first. Least
 * recently used rather than Caffeine's W-TinyLFU: each prompt is written once and read once, by its
 * conversation's next turn, and TinyLFU's admission prefers entries read before (or kept longer) over
 * a newly written one, so at its bound it would keep finished conversations' prompts and refuse the
 * new turns'. A conversation's next turn then drops the prompt it extended ({@link
 * PrefixedTokens#remember}), so a conversation holds one entry.
 *
 * <p>Thread-safe: one lock around a map operation of O(1) (an eviction of {@code k} prompts, O(k));
 * the token assembly, the comparison and the copies happen outside it.
 */
final class MessagePrefixCache {
  /** Per cached prompt besides its arrays: key, entry, map node and array headers, rounded up. */
  static final int ENTRY_OVERHEAD_BYTES = 192;
  /** Per kept message besides its bytes: a kept-segment object, an array header and a reference. */
  static final int MESSAGE_OVERHEAD_BYTES = 72;

  private static final long P1 = 0x9E3779B185EBCA87L;
  private static final long P2 = 0xC2B2AE3D27D4EB4FL;
  private static final long P3 = 0x165667B19E3779F9L;
  private static final long P4 = 0x85EBCA77C2B2AE63L;

  /** The key of a prompt's first {@code messages} messages. */
  record Key(long a, long b, int messages) {
    static final Key EMPTY = new Key(P3, P4, 0);

    /**
     * The first lane of the key of messages keyed {@code a} followed by one whose role and text have
     * fingerprints {@code role} and {@code text} (computed in longs, without a key object per
     * message).
     */
    static long nextA(long a, long role, long text) {
      return lane(lane(a, text, P1, 31), role, P2, 29);
    }

    /** The second lane, as {@link #nextA}. */
    static long nextB(long b, long role, long text) {
      return lane(lane(b, text, P3, 23), role, P4, 37);
    }

    private static long lane(long acc, long input, long prime, int rotation) {
      acc += input * prime;
      acc = Long.rotateLeft(acc, rotation);
      acc *= P1;
      return acc ^ (acc >>> 29);
    }
  }

  /**
   * A cached prompt: {@code tokens}, of which the first {@code messageTokens} are its messages', the
   * page hashes of its first pages, and its messages (detached from their request's body; the array
   * is never written).
   */
  record Entry(SegmentedTokens tokens, int messageTokens, PageHashes hashes, KeptSegment[] messages, long messageBytes) {
    /**
     * Whether the first {@code messages.length} of {@code segments} are this prompt's messages:
     * the same roles and the same texts ({@link KeptSegment#matches}).
     */
    boolean holds(List<PromptSegment> segments) {
      if (segments.size() < messages.length) {
        return false;
      }
      for (int i = 0; i < messages.length; i++) {
        if (!messages[i].matches(segments.get(i))) {
          return false;
        }
      }
      return true;
    }
  }

  private final long maxBytes;
  private final KeptSegment.Form form;
  private final LinkedHashMap<Key, Entry> map = new LinkedHashMap<>(64, 0.75f, true); // guarded by this
  private long bytes; // guarded by this

  /**
   * @param form how the kept prompts keep their messages read from a body
   * @throws IllegalArgumentException if {@code maxBytes} is negative
   */
  MessagePrefixCache(long maxBytes, KeptSegment.Form form) {
    if (maxBytes < 0) {
      throw new IllegalArgumentException("maxBytes: " + maxBytes + " (expected: >= 0)");
    }
    this.maxBytes = maxBytes;
    this.form = java.util.Objects.requireNonNull(form, "form");
  }

  /** How the kept prompts keep their messages read from a body. */
  KeptSegment.Form form() {
    return form;
  }

  static long weigh(Entry e) {
    return 4L * e.tokens().length() + e.hashes().estimatedBytes() + e.messageBytes()
        + (long) MESSAGE_OVERHEAD_BYTES * e.messages().length + ENTRY_OVERHEAD_BYTES;
  }

  /** The prompt cached under {@code key}, or {@code null}; a hit makes it the most recently used. */
  synchronized Entry get(Key key) {
    return map.get(key);
  }

  /** Caches {@code entry} as the most recently used, evicting the least recently used over the bound. */
  synchronized void put(Key key, Entry entry) {
    long weight = weigh(entry);
    if (weight > maxBytes) {
      invalidate(key);
      return;
    }
    Entry old = map.put(key, entry);
    bytes += weight - (old == null ? 0 : weigh(old));
    if (bytes > maxBytes) {
      Iterator<Entry> it = map.values().iterator();
      while (bytes > maxBytes) {
        bytes -= weigh(it.next());
        it.remove();
      }
    }
  }

  synchronized void invalidate(Key key) {
    Entry old = map.remove(key);
    if (old != null) {
      bytes -= weigh(old);
    }
  }

  /** Prompts in the cache now. */
  synchronized long size() {
    return map.size();
  }

  /** The estimated heap bytes of the cached prompts (the weight the bound applies to). */
  synchronized long estimatedBytes() {
    return bytes;
  }
}
