package dev.kvroute.core.index;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.Ticker;

/**
 * An approximate, multi-tenant view of which token prefixes each backend holds in its KV cache: a
 * radix tree over pages of {@code pageSizeTokens} tokens, each page identified by a chained hash of its
 * tokens and its parent's hash, each node recording which backends hold it and when each last used it.
 *
 * <p>Each backend's view is bounded by its capacity in tokens and evicts least recently used pages
 * tail-first, as vLLM's block manager does, so the index never predicts more than the engine can hold
 * (pages pinned by in-flight requests, see {@link #insertAndPin}, are never evicted, so a view whose
 * every page is pinned may exceed its capacity by those until they are released, up to twice its
 * capacity: an insert into a view that full indexes only the prompt's first pages for it).
 * Only whole pages are indexed: a prompt's trailing partial page is ignored.
 *
 * <p>Cost: every operation is O(pages of the prompt) amortized, whatever the views' sizes.
 *
 * <p>Implementations are thread-safe: {@link #match} and {@link #insert} may be called concurrently
 * from several event loops.
 */
public interface PrefixIndex {

  /**
   * The approximate radix tree: nodes are pages of {@code pageSizeTokens} tokens (16 matches vLLM's
   * default block size) keyed by a chained XXH64 hash, per-backend LRU lists evict tail-first in O(1)
   * per page, and memory is bounded by the sum of the backends' capacities. Match runs under a shared
   * read lock, mutations under an exclusive write lock.
   *
   * @param pageSizeTokens tokens per page, {@code > 0}
   * @param ticker the clock recording when each backend last used each page
   * @throws IllegalArgumentException if {@code pageSizeTokens <= 0}
   */
  static PrefixIndex radix(int pageSizeTokens, Ticker ticker) {
    return new RadixPrefixIndex(pageSizeTokens, ticker);
  }

  /**
   * Registers {@code backend} with a KV capacity of {@code capacityTokens}; re-adding updates it and,
   * if it shrank, evicts down to the new capacity at once. Only whole pages count.
   *
   * @throws IllegalArgumentException if {@code capacityTokens < 0}
   */
  void addBackend(BackendId backend, long capacityTokens);

  /** Drops {@code backend} and everything it was believed to hold, at once. */
  void removeBackend(BackendId backend);

  /**
   * Forgets everything {@code backend} was believed to hold, keeping it registered with its
   * capacity: its engine restarted with an empty cache. Pins taken before become no-ops. Does
   * nothing for an unregistered backend.
   */
  void forget(BackendId backend);

  /**
   * A prompt's tokens, as {@link #prompt} prepares them for one index. The router matches a prompt
   * and then inserts it into the chosen backend's view; a prepared prompt lets both calls share the
   * work that depends only on the tokens (for the radix index: the chained page hashes, computed
   * once, on first use, and outside the write lock for the insert).
   *
   * <p>Not thread-safe: one prompt belongs to one request. Any implementation is accepted by every
   * index; one prepared by another index (or another page size) is simply prepared again.
   */
  @FunctionalInterface
  interface Prompt {
    /** The prompt's token ids (not a copy; do not modify). */
    int[] tokens();

    /** The prompt's length in tokens, without assembling {@link #tokens()} if they are held in segments. */
    default int length() {
      return tokens().length;
    }

    /**
     * The prompt's namespace ({@link #namespace(String, String)}); {@code 0}, the default, is the
     * namespace of requests that name no model.
     */
    default long namespace() {
      return 0L;
    }

    /**
     * The page hashes this prompt has computed so far (for the radix index, every page once it was
     * inserted), for {@link #prompt(int[], long, PageHashes, int)} of a later prompt that starts with
     * the same tokens; {@link PageHashes#NONE} for a prompt that keeps none (the default).
     */
    default PageHashes pageHashes() {
      return PageHashes.NONE;
    }
  }

  /** {@code tokens} prepared for {@link #match(Prompt)} and {@link #insert(BackendId, Prompt)}. */
  default Prompt prompt(int[] tokens) {
    java.util.Objects.requireNonNull(tokens, "tokens");
    return () -> tokens;
  }

  /**
   * {@code tokens} prepared as {@link #prompt(int[])}, in {@code namespace}: pages of one namespace
   * never match pages of another, as vLLM puts a request's LoRA adapter into every block hash (the
   * radix index seeds the prompt's page-hash chain with the namespace). Capacity stays per backend:
   * every namespace's pages compete for the backend's one view, as adapters share one engine's KV
   * pool.
   */
  default Prompt prompt(int[] tokens, long namespace) {
    java.util.Objects.requireNonNull(tokens, "tokens");
    return new Prompt() {
      @Override
      public int[] tokens() {
        return tokens;
      }

      @Override
      public long namespace() {
        return namespace;
      }
    };
  }

  /**
   * As {@link #prompt(int[], long)}, taking the hashes of its first pages from {@code known} instead
   * of computing them: the caller guarantees that {@code tokens}' first {@code sharedTokens} tokens
   * are the first tokens of the prompt {@code known} came from ({@link Prompt#pageHashes()}). Pages
   * wholly inside those tokens (at most {@code known.pages()}) are taken; a page that ends past them
   * (a prefix ending mid-page) and every later page are hashed as usual, so the prompt's page hashes
   * are exactly those {@link #prompt(int[], long)} computes. Hashes of another page size or namespace
   * are ignored. The default ignores {@code known}.
   *
   * @throws IllegalArgumentException if {@code sharedTokens} is negative or above {@code tokens.length}
   */
  default Prompt prompt(int[] tokens, long namespace, PageHashes known, int sharedTokens) {
    java.util.Objects.requireNonNull(known, "known");
    if (sharedTokens < 0 || sharedTokens > tokens.length) {
      throw new IllegalArgumentException("sharedTokens: " + sharedTokens + " (expected: 0 to "
          + tokens.length + ", the prompt's tokens)");
    }
    return prompt(tokens, namespace);
  }

  /**
   * As {@link #prompt(int[], long, PageHashes, int)} for tokens held in segments (a chat turn's
   * previous turn shared, not copied): the radix index hashes the pages after {@code sharedTokens}
   * where they lie and never assembles the flat array; the default assembles it.
   *
   * @throws IllegalArgumentException if {@code sharedTokens} is negative or above {@code tokens.length()}
   */
  default Prompt prompt(SegmentedTokens tokens, long namespace, PageHashes known, int sharedTokens) {
    return prompt(tokens.toArray(), namespace, known, sharedTokens);
  }

  /**
   * The namespace of requests for LoRA adapter {@code adapter}: a 64-bit XXH64 of its UTF-8 name, never
   * {@code 0}; {@code 0} (the default namespace) for a base model. The base model's name does not enter,
   * as it does not enter vLLM's block hashes (their extra keys name the adapter): an engine serves one
   * base model, whose served names (aliases) share its cache, and the candidates of a request are
   * already the backends serving its model, so base models need no namespace of their own. The
   * precise view roots the chains it learns from KV events ({@code lora_name}) the same way.
   * Stateless and thread-safe.
   *
   * @param adapter the LoRA adapter's name, or {@code null} for the base model
   */
  static long namespace(String adapter) {
    if (adapter == null) {
      return 0L;
    }
    long h = PageHash.xxh64(adapter.getBytes(java.nio.charset.StandardCharsets.UTF_8), PageHash.ROOT);
    return h == 0 ? 1 : h;
  }

  /**
   * Matched leading tokens of {@code tokens} for every registered backend, in one descent. Does not
   * change recency.
   */
  PrefixMatch match(int[] tokens);

  /** As {@link #match(int[])} for a prepared prompt. */
  default PrefixMatch match(Prompt prompt) {
    return match(prompt.tokens());
  }

  /**
   * Records that {@code backend} now holds every whole page of {@code tokens} and marks them used
   * now, evicting that backend's least recently used pages (tail-first) beyond its capacity.
   *
   * @throws IllegalArgumentException if {@code backend} is not registered
   */
  void insert(BackendId backend, int[] tokens);

  /**
   * As {@link #insert(BackendId, int[])} for a prepared prompt.
   *
   * @throws IllegalArgumentException if {@code backend} is not registered
   */
  default void insert(BackendId backend, Prompt prompt) {
    insert(backend, prompt.tokens());
  }

  /**
   * The pages of one routed prompt pinned in one backend's view by {@link #insertAndPin}, as the
   * engine's blocks are held by the running request.
   */
  @FunctionalInterface
  interface Pin {
    /** A pin that holds nothing. */
    Pin NONE = () -> {};

    /**
     * The request's prefill has run (its first token came): if the pages its insert added are still
     * provisional (nothing else changed the view since), they start to count against the view's
     * capacity now, evicting the least recently used unpinned pages beyond it. No effect otherwise,
     * or after the pin ended. The default does nothing. Thread-safe.
     */
    default void confirm() {}

    /**
     * The request finished: unpins its pages and marks them used now, as vLLM frees a finished
     * request's blocks to the most recently used end of its free queue (so a session that just ended
     * outlives one that ended earlier, whenever each was routed). Pages still pinned by other
     * requests stay pinned. Then evicts down to the capacity if pins had held the view above it.
     * Only the first call of this or {@link #abandon} has an effect; a no-op if the backend was
     * removed meanwhile (even if it was added again). Thread-safe.
     */
    void release();

    /**
     * As {@link #release()}, with the engine's report of the prompt tokens it had cached when it
     * admitted the request ({@code usage.prompt_tokens_details.cached_tokens}). When the engine had
     * fewer whole pages of the prompt than the view held when the prompt was routed ({@link
     * UsageCorrection}), it had evicted the first page it lacked behind the router's back (other
     * routers' or clients' traffic, a cache smaller than configured). vLLM evicts least recently
     * freed blocks first, the order the view keeps, so after the release the radix index also evicts,
     * for this backend only, every unpinned page the view last saw used no later than that page: what
     * the engine cannot have had. The prompt's own pages stay (the engine has just computed them
     * again), so the backend's next turn of the same conversation is still predicted in full. A
     * negative count does not correct. The default releases. Thread-safe.
     */
    default void release(int engineCachedTokens) {
      release();
    }

    /**
     * The request was not served (the backend refused it, or it failed before its first token), so
     * the engine holds nothing new for it: removes from the view the pages the pinning insert added,
     * deepest first, as long as no other request has used them since, then releases the rest as
     * {@link #release} does. Without it, a rejected request (say, a prompt longer than the engine
     * takes) would stay credited to the backend and push real prefixes out of its view. Only the
     * first call of this or {@link #release} has an effect. The default releases. Thread-safe.
     */
    default void abandon() {
      release();
    }
  }

  /**
   * As {@link #insert(BackendId, Prompt)}, and pins the inserted pages (the prompt's whole pages up to
   * the backend's capacity) until the returned pin is released: pinned pages are not evicted. Pins
   * are counted per page, so a prefix shared by several in-flight prompts stays pinned until every
   * one is released. The pages the insert adds are provisional until the view next changes (another
   * insert, or a confirmation or end of any pin, settles them): they evict nothing before, so a
   * request the engine rejects at once and that is {@linkplain Pin#abandon abandoned} before anything
   * else happens on the backend has pushed no real prefix out of the view. When every page is
   * pinned, the view exceeds its capacity by the pinned pages until releases trim it, but never holds
   * more than twice its capacity: the pages beyond are neither indexed nor pinned for this backend.
   *
   * <p>The default implementation inserts without pinning; its pin inserts the prompt again on the
   * first release (the refresh, without the pin) and does nothing when abandoned.
   *
   * @throws IllegalArgumentException if {@code backend} is not registered
   */
  default Pin insertAndPin(BackendId backend, Prompt prompt) {
    insert(backend, prompt);
    java.util.concurrent.atomic.AtomicBoolean ended = new java.util.concurrent.atomic.AtomicBoolean();
    return new Pin() {
      @Override
      public void release() {
        if (ended.compareAndSet(false, true)) {
          try {
            insert(backend, prompt);
          } catch (IllegalArgumentException removed) {
            // the backend was removed meanwhile: nothing to refresh
          }
        }
      }

      @Override
      public void abandon() {
        ended.set(true);
      }
    };
  }

  /** Tokens currently attributed to {@code backend} (a multiple of the page size). */
  long sizeTokens(BackendId backend);

  /** Estimated heap bytes held by the whole index. */
  long estimatedBytes();

  /** Page size in tokens. */
  int pageSizeTokens();

  /**
   * Verifies internal consistency (sizes, LRU links, parent/child links, capacity bounds) and throws
   * {@link IllegalStateException} describing the first violation. For tests; may walk the whole tree.
   */
  void checkInvariants();
}
