package dev.kvroute.core.tokenize;

import dev.kvroute.core.index.PageHashes;
import dev.kvroute.core.index.SegmentedTokens;
import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.KeptSegment;
import dev.kvroute.core.request.PromptSegment;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.core.request.TextHash;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * {@link PromptTokenizer} with a Caffeine piece cache keyed by {@link TextHash} and bounded by
 * estimated bytes. A piece's text is asked for (and, for a segment parsed from a body, decoded) only
 * on a miss.
 *
 * <p>{@link #tokenizePrefixed} also keeps chat prompts by their whole messages ({@link
 * MessagePrefixCache}, a quarter of the piece cache's bound): a prompt whose messages extend a kept
 * prompt's (a conversation's next turn; up to {@value #PREFIX_PROBES} messages more) shares the kept
 * tokens ({@link SegmentedTokens}, not copied) and looks up only its new messages' pieces. The
 * tokens are the same as {@link #tokenize(RequestView)}'s.
 */
final class CachingPromptTokenizer implements PromptTokenizer {
  private static final List<String> COMMON_ROLES =
      List.of("system", "developer", "user", "assistant", "tool", "function");

  /** How many message-prefix lengths a prompt tries, longest (all its messages) first. */
  static final int PREFIX_PROBES = 4;

  /** Slots of {@link #probes}: a power of two, more than a router's event loops and body workers. */
  static final int PROBE_SLOTS = 64;

  private final Tokenizer tokenizer;
  private final PieceCache cache;
  private final MessagePrefixCache prefixes;
  private final Map<String, int[]> commonHeaders;
  private final int[] imEnd;
  private final int[] generationPrompt;
  /**
   * The estimates' probes until the tokenizing of their views takes them, in the slot of the view's
   * identity hash: a view routed on another thread than its estimate (sent off the event loop)
   * finds its probe too. Two views in one slot at once: the later estimate's wins and the other's
   * tokenizing probes again. At most {@value #PROBE_SLOTS} views are held past their requests (an
   * estimate that no tokenizing followed: a request refused or failed before routing), until their
   * slot's next estimate. Not a thread-local: its
   * first use on each new thread (an event loop's first request after the warm-up, which ran on
   * other threads) took a branch the compiled request path had never seen, and the deoptimization
   * that followed recompiled the whole path on the serving core (docs/performance.md, "What the
   * warm-up left to the first seconds").
   */
  private final AtomicReferenceArray<Probe> probes = new AtomicReferenceArray<>(PROBE_SLOTS);

  CachingPromptTokenizer(Tokenizer tokenizer, long maxCacheBytes) {
    this(tokenizer, maxCacheBytes, KeptSegment.Form.PREFERRED);
  }

  /** @param keptForm how kept prompts keep their messages read from a body ({@link MessagePrefixCache}) */
  CachingPromptTokenizer(Tokenizer tokenizer, long maxCacheBytes, KeptSegment.Form keptForm) {
    this.tokenizer = Objects.requireNonNull(tokenizer, "tokenizer");
    this.cache = new PieceCache(maxCacheBytes);
    this.prefixes = new MessagePrefixCache(maxCacheBytes / 4, keptForm);
    Map<String, int[]> headers = new java.util.HashMap<>();
    for (String role : COMMON_ROLES) {
      headers.put(role, tokenizer.encode(header(role)));
    }
    this.commonHeaders = Map.copyOf(headers);
    this.imEnd = tokenizer.encode(IM_END);
    this.generationPrompt = tokenizer.encode(GENERATION_PROMPT);
  }

  private static String header(String role) {
    return IM_START + role + "\n";
  }

  /**
   * As the interface says; also drops the probe an estimate left for {@code view} (a policy that
   * reads tokens but no prefix match tokenizes this way, and the probe would hold the request's
   * body until its slot's next estimate).
   */
  @Override
  public int[] tokenize(RequestView view) {
    int slot = slot(view);
    Probe left = probes.get(slot);
    if (left != null && left.view == view) {
      probes.compareAndSet(slot, left, null);
    }
    return tokenize(view.endpoint(), view.segments());
  }

  @Override
  public int[] tokenize(Endpoint endpoint, List<PromptSegment> segments) {
    boolean chat = endpoint == Endpoint.CHAT_COMPLETIONS;
    int pieceCount = chat ? 3 * segments.size() + 1 : segments.size();
    int[][] pieces = new int[pieceCount][];
    int n = 0;
    long total = 0;
    for (PromptSegment s : segments) {
      if (chat) {
        pieces[n++] = headerTokens(s.role() == null ? "user" : s.role());
        pieces[n++] = tokens(s);
        pieces[n++] = imEnd;
        total += pieces[n - 3].length + pieces[n - 2].length + imEnd.length;
      } else {
        pieces[n] = tokens(s);
        total += pieces[n++].length;
      }
    }
    if (chat) {
      pieces[n++] = generationPrompt;
      total += generationPrompt.length;
    }
    if (total > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException("prompt: " + total + " tokens (expected: fewer than 2^31)");
    }
    int[] out = new int[(int) total];
    int at = 0;
    for (int[] p : pieces) {
      System.arraycopy(p, 0, out, at, p.length);
      at += p.length;
    }
    return out;
  }

  @Override
  public PrefixedTokens tokenizePrefixed(RequestView view) {
    List<PromptSegment> segments = view.segments();
    int n = segments.size();
    if (view.endpoint() != Endpoint.CHAT_COMPLETIONS || n == 0) {
      return PrefixedTokens.of(tokenize(view));
    }
    int slot = slot(view);
    Probe probe = probes.get(slot);
    if (probe != null && probe.view == view && probes.compareAndSet(slot, probe, null)) {
      // taken: the view is not held past its tokenizing
    } else {
      probe = probe(segments);
      if (probe == null) {
        return PrefixedTokens.of(tokenize(view));
      }
    }
    MessagePrefixCache.Key[] keys = probe.keys;
    MessagePrefixCache.Entry known = probe.known;
    int j = probe.j;
    int from = known == null ? 0 : n - j; // the first message not in the known prompt
    int[][] pieces = new int[3 * (n - from) + 1][];
    int p = 0;
    long total = known == null ? 0 : known.messageTokens();
    for (int i = from; i < n; i++) {
      PromptSegment s = segments.get(i);
      pieces[p++] = headerTokens(role(s));
      pieces[p++] = tokens(s);
      pieces[p++] = imEnd;
      total += pieces[p - 3].length + pieces[p - 2].length + imEnd.length;
    }
    pieces[p] = generationPrompt;
    total += generationPrompt.length;
    if (total > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException("prompt: " + total + " tokens (expected: fewer than 2^31)");
    }
    int knownTokens = known == null ? 0 : known.messageTokens();
    int[] tail = new int[(int) (total - knownTokens)];
    int at = 0;
    for (int[] piece : pieces) {
      System.arraycopy(piece, 0, tail, at, piece.length);
      at += piece.length;
    }
    // the kept prompt's tokens are shared, not copied: a turn's new tokens only are written
    SegmentedTokens out = known == null ? SegmentedTokens.of(tail) : known.tokens().prefix(knownTokens).append(tail);
    return PrefixedTokens.cached(out, prefixes, keys[0], out.length() - generationPrompt.length,
        known == null ? null : keys[j], known, segments);
  }

  @Override
  public boolean asksForMessageHashes() {
    return false;
  }

  /**
   * As the interface says: the probes of {@link #tokenizePrefixed}, byte comparison included (a
   * key alone is cheap to collide with: two texts of one length agreeing on the fingerprinted
   * words, so an estimate by key would send crafted or edited text to be encoded on the event loop),
   * then the piece cache for each message after the longest kept prompt. A kept prompt found is
   * made the most recently used, as the routing that follows would; what the probes found is left
   * for that routing's tokenizing, on this thread or another ({@link Probe}).
   */
  @Override
  public long uncachedCodePoints(RequestView view) {
    List<PromptSegment> segments = view.segments();
    int n = segments.size();
    int from = 0;
    if (view.endpoint() == Endpoint.CHAT_COMPLETIONS && n > 0) {
      Probe probe = probe(segments);
      if (probe != null) {
        probe.view = view;
        probes.set(slot(view), probe);
        from = probe.known == null ? 0 : n - probe.j;
      }
    }
    long uncached = 0;
    for (int i = from; i < n; i++) {
      PromptSegment s = segments.get(i);
      if (!s.isTokens() && !cache.contains(s.textHash())) {
        uncached += s.codePointCount();
      }
    }
    return uncached;
  }

  /**
   * As the interface says: the kept prompt the probes find (the one an estimate left for {@code view},
   * not taken, so the tokenizing that follows still finds it), and the estimate: its tokens, then for
   * each later message its header and end and its cached piece's tokens, or a quarter token per code
   * point when its piece is not cached. {@code null} for a prompt that is not chat or gives a segment as
   * tokens (never kept).
   */
  @Override
  public KnownLead knownLead(RequestView view) {
    List<PromptSegment> segments = view.segments();
    int n = segments.size();
    if (view.endpoint() != Endpoint.CHAT_COMPLETIONS || n == 0) {
      return null;
    }
    Probe probe = probes.get(slot(view));
    if (probe == null || probe.view != view) {
      probe = probe(segments);
      if (probe == null) {
        return null;
      }
    }
    MessagePrefixCache.Entry known = probe.known;
    int knownTokens = known == null ? 0 : known.messageTokens();
    long estimate = knownTokens + generationPrompt.length;
    for (int i = known == null ? 0 : n - probe.j; i < n; i++) {
      PromptSegment s = segments.get(i);
      int[] cached = cache.peek(s.textHash());
      estimate += headerTokens(role(s)).length + imEnd.length
          + (cached != null ? cached.length : (s.codePointCount() + 3) / 4);
    }
    return new KnownLead(known == null ? SegmentedTokens.of(new int[0]) : known.tokens().prefix(knownTokens),
        known == null ? PageHashes.NONE : known.hashes(), (int) Math.min(estimate, Integer.MAX_VALUE - 8));
  }

  /**
   * The message-prefix probes of a chat prompt ({@code segments}, at least one): the keys of its last
   * {@value #PREFIX_PROBES} message prefixes ({@code keys[j]} that of the first {@code n - j}
   * messages) and the longest kept prompt whose messages it starts with, byte comparison included
   * ({@code known}, at {@code keys[j]}; null, with {@code j} the number of probes, if none); null if
   * a segment is given as tokens (no prompt with token segments is kept).
   */
  private Probe probe(List<PromptSegment> segments) {
    int n = segments.size();
    int probes = Math.min(PREFIX_PROBES, n);
    MessagePrefixCache.Key[] keys = new MessagePrefixCache.Key[probes];
    long a = MessagePrefixCache.Key.EMPTY.a();
    long b = MessagePrefixCache.Key.EMPTY.b();
    for (int i = 0; i < n; i++) { // the chain in two longs: a key object only for the probes
      PromptSegment s = segments.get(i);
      if (s.isTokens()) {
        return null;
      }
      long role = roleFingerprint(role(s));
      long text = s.fingerprint();
      a = MessagePrefixCache.Key.nextA(a, role, text);
      b = MessagePrefixCache.Key.nextB(b, role, text);
      if (i >= n - probes) {
        keys[n - 1 - i] = new MessagePrefixCache.Key(a, b, i + 1);
      }
    }
    int j = 0;
    for (; j < probes; j++) {
      MessagePrefixCache.Entry e = prefixes.get(keys[j]);
      if (e != null && e.holds(segments)) {
        return new Probe(keys, j, e);
      }
    }
    return new Probe(keys, j, null);
  }

  private static int slot(RequestView view) {
    return System.identityHashCode(view) & (PROBE_SLOTS - 1);
  }

  /**
   * What {@link #probe} found for a prompt. The estimate before routing ({@link #uncachedCodePoints})
   * leaves its probe for the tokenizing that follows ({@link #probes}, with the view it is for,
   * compared by identity), so that a routed turn compares its conversation's bytes once, not twice.
   * Its fields are published to the tokenizing thread by the slot's volatile write and read.
   */
  private static final class Probe {
    final MessagePrefixCache.Key[] keys;
    final int j;
    final MessagePrefixCache.Entry known;
    RequestView view;

    Probe(MessagePrefixCache.Key[] keys, int j, MessagePrefixCache.Entry known) {
      this.keys = keys;
      this.j = j;
      this.known = known;
    }
  }

  private static String role(PromptSegment s) {
    return s.role() == null ? "user" : s.role();
  }

  /** A role's part of a prompt key: its String hash (roles are compared whole by {@code Entry#holds}). */
  private static long roleFingerprint(String role) {
    return role.hashCode();
  }

  /** The chat prompts kept by their messages, and their estimated heap bytes; for metrics and tests. */
  long cachedPrompts() {
    return prefixes.size();
  }

  long cachedPromptBytes() {
    return prefixes.estimatedBytes();
  }

  /** A segment's tokens: its ids as given, or its text's tokens through the cache. */
  private int[] tokens(PromptSegment s) {
    if (s.isTokens()) {
      return s.tokenIds();
    }
    return cache.get(s.textHash(), k -> tokenizer.encode(s.text()));
  }

  private int[] headerTokens(String role) {
    int[] common = commonHeaders.get(role);
    if (common != null) {
      return common;
    }
    String header = header(role);
    return cache.get(TextHash.of(header), k -> tokenizer.encode(header));
  }

  @Override
  public int[] encode(String piece) {
    return cache.encode(tokenizer, piece);
  }

  @Override
  public Tokenizer tokenizer() {
    return tokenizer;
  }

  @Override
  public long cachedPieces() {
    return cache.size();
  }
}
