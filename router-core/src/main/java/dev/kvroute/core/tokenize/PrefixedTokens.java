package dev.kvroute.core.tokenize;

import dev.kvroute.core.index.PageHashes;
import dev.kvroute.core.index.SegmentedTokens;
import dev.kvroute.core.request.KeptSegment;
import java.util.Objects;

/**
 * A request's prompt tokens ({@link PromptTokenizer#tokenizePrefixed}) with what its tokenizer knew
 * of their start: the page hashes an earlier prompt with the same leading messages left ({@link
 * #knownPageHashes}, valid for the first {@link #sharedTokens} tokens), and a way to leave this
 * prompt's own for the next turn ({@link #remember}).
 *
 * <p>Not thread-safe: one belongs to one request.
 */
public final class PrefixedTokens {
  private final SegmentedTokens tokens;
  private final MessagePrefixCache cache; // null: nothing to remember
  private final MessagePrefixCache.Key key;
  private final int messageTokens;
  private final MessagePrefixCache.Key knownKey; // null: no earlier prompt known
  private final MessagePrefixCache.Entry known;
  private final java.util.List<dev.kvroute.core.request.PromptSegment> messages; // null: nothing to remember

  private PrefixedTokens(SegmentedTokens tokens, MessagePrefixCache cache, MessagePrefixCache.Key key,
      int messageTokens, MessagePrefixCache.Key knownKey, MessagePrefixCache.Entry known,
      java.util.List<dev.kvroute.core.request.PromptSegment> messages) {
    this.tokens = Objects.requireNonNull(tokens, "tokens");
    this.cache = cache;
    this.key = key;
    this.messageTokens = messageTokens;
    this.knownKey = knownKey;
    this.known = known;
    this.messages = messages;
  }

  /** Tokens with nothing known about them and nothing to remember. */
  public static PrefixedTokens of(int[] tokens) {
    return new PrefixedTokens(SegmentedTokens.of(tokens), null, null, 0, null, null, null);
  }

  /**
   * Tokens whose first {@code messageTokens} are the messages keyed {@code key}, the first
   * {@code known.messageTokens()} of them those of the cached prompt {@code known} (or none), and
   * {@code messages} the request's messages (read again only by {@link #remember}).
   */
  static PrefixedTokens cached(SegmentedTokens tokens, MessagePrefixCache cache, MessagePrefixCache.Key key,
      int messageTokens, MessagePrefixCache.Key knownKey, MessagePrefixCache.Entry known,
      java.util.List<dev.kvroute.core.request.PromptSegment> messages) {
    return new PrefixedTokens(tokens, cache, key, messageTokens, knownKey, known, messages);
  }

  /** The prompt's token ids (not a copy; do not modify), assembled from {@link #segmented()} on first use. */
  public int[] tokens() {
    return tokens.toArray();
  }

  /** The prompt's token ids as held: the earlier prompt's arrays shared, then this prompt's new tokens. */
  public SegmentedTokens segmented() {
    return tokens;
  }

  /** How many leading tokens are an earlier prompt's, whose page hashes {@link #knownPageHashes} are. */
  public int sharedTokens() {
    return known == null ? 0 : known.messageTokens();
  }

  /** The page hashes of the earlier prompt whose first {@link #sharedTokens} tokens this one shares. */
  public PageHashes knownPageHashes() {
    return known == null ? PageHashes.NONE : known.hashes();
  }

  /**
   * Keeps this prompt, with {@code hashes} (its prefix-index prompt's {@code pageHashes()} after
   * routing), for the next prompt that extends its messages. The earlier prompt it extended is
   * dropped if this one adds two or more messages to it: a conversation's next turn (the reply, then
   * the new message) supersedes the previous turn, whose prompt no later turn asks for. A prompt that
   * adds one message leaves it: several questions on one context (few-shot prompts, an agent's
   * fan-out) ask for it again. Does nothing for tokens that were not assembled from messages.
   *
   * <p>The kept prompt holds its messages for the next turn to recognize ({@link KeptSegment}, in the
   * cache's form: copies of their bytes, or digests): the earlier prompt's kept messages for those
   * they share, and its own for the rest, so a turn copies or digests only its new messages. Call it
   * while the request's body is unchanged (during routing).
   */
  public void remember(PageHashes hashes) {
    Objects.requireNonNull(hashes, "hashes");
    if (cache == null) {
      return;
    }
    int n = key.messages();
    KeptSegment[] kept = new KeptSegment[n];
    int shared = known == null ? 0 : known.messages().length;
    long bytes = known == null ? 0 : known.messageBytes();
    if (shared > 0) {
      System.arraycopy(known.messages(), 0, kept, 0, shared);
    }
    for (int i = shared; i < n; i++) {
      kept[i] = KeptSegment.of(messages.get(i), cache.form());
      bytes += kept[i].heldBytes();
    }
    // the flat array alone if anything assembled it (the precise index does): never both
    cache.put(key, new MessagePrefixCache.Entry(tokens.compact(), messageTokens, hashes, kept, bytes));
    if (knownKey != null && knownKey.messages() <= key.messages() - 2) {
      cache.invalidate(knownKey);
    }
  }
}
