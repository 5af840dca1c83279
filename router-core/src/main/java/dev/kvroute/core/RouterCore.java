package dev.kvroute.core;

import dev.kvroute.core.index.PrefixIndex;
import dev.kvroute.core.load.Lease;
import dev.kvroute.core.load.LoadTracker;
import dev.kvroute.core.policy.Decision;
import dev.kvroute.core.policy.PromptReads;
import dev.kvroute.core.policy.RoutingContext;
import dev.kvroute.core.policy.RoutingPolicy;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.core.tokenize.PromptTokenizer;
import java.util.Collection;

/**
 * The routing brain: tokenizes a request, matches it against the prefix index, asks the policy, takes
 * a load lease, and records the prompt in the chosen backend's view. No networking.
 *
 * <p>{@code route} does, for a policy that reads the prefix match, in order: tokenize ({@link PromptTokenizer}, segment-cached); one
 * {@link PrefixIndex#match} descent; build one {@link dev.kvroute.core.policy.Candidate} per
 * registered backend of {@code healthy}, sorted by {@link BackendId} (so the order never depends on
 * the caller's collection), with its matched tokens and its {@link LoadTracker#load load}; ask the
 * policy; record the whole prompt in the chosen backend's index view; and take a lease charging the
 * backend {@code promptTokens - predictedCachedTokens} prefill tokens. When that lease is released
 * (the request ended), the prompt's pages are marked used again in the backend's view, so that the
 * index's LRU order follows the engine's, which orders cached blocks by when their request released
 * them. Backends in {@code healthy} that were never {@link #addBackend added} (or were removed
 * meanwhile) are ignored.
 *
 * <p>{@code route} computes only what the policy reads ({@link RoutingPolicy#reads}, per request): for
 * {@link PromptReads#NONE} ({@code round-robin}, {@code random}, {@code least-loaded}, {@code
 * power-of-two}, {@code sticky} with a session key) it neither tokenizes a {@link RequestView} nor
 * touches the index; for {@link PromptReads#TOKENS} ({@code sticky} without a session key) it
 * tokenizes but does not hash pages, match, record or pin. Either way every candidate's matched tokens
 * are 0, the prediction is 0 ({@link Routed#reads} says it is none), and the lease charges the whole
 * prompt as prefill tokens (0 when it was not tokenized). {@code explain} always tokenizes and
 * matches, to show what the index holds for the prompt.
 *
 * <p>Thread-safe: the proxy calls it from every event loop; the simulator from one thread.
 */
public interface RouterCore {

  /**
   * A router core over the given parts; nothing is registered yet.
   *
   * @param policy decides among the candidates
   * @param tokenizer turns requests into the tokens the index sees
   * @param index the prefix index
   * @param loads the load tracker leases are taken from
   */
  static RouterCore create(
      RoutingPolicy policy, PromptTokenizer tokenizer, PrefixIndex index, LoadTracker loads) {
    return new DefaultRouterCore(policy, tokenizer, index, loads);
  }

  /** The outcome of routing one request. */
  interface Routed {
    /** The decision, with matched tokens and loads per candidate. */
    Decision decision();

    /** The prompt's token ids, as the index sees them; empty when it was not tokenized ({@link #reads}). */
    int[] promptTokens();

    /** The prompt's length in tokens: {@code promptTokens().length}, without assembling the array. */
    default int promptLength() {
      return promptTokens().length;
    }

    /**
     * Tokens the chosen backend is predicted to have cached (whole pages); 0, predicting nothing, when
     * the prompt was not matched ({@link #reads} below {@link PromptReads#PREFIX_MATCH}).
     */
    int predictedCachedTokens();

    /**
     * What the policy read of the prompt, hence what the core computed: below {@link
     * PromptReads#PREFIX_MATCH} the index was neither matched nor recorded in, and with {@link
     * PromptReads#NONE} the prompt was not tokenized either ({@link #promptTokens} holds the tokens the
     * caller gave, else none).
     */
    default PromptReads reads() {
      return PromptReads.PREFIX_MATCH;
    }

    /** The request's load lease on the chosen backend; released exactly once by the caller's paths. */
    Lease lease();
  }

  /**
   * A request routed before its prompt was encoded ({@link #routeAhead}). Until {@link #record} has
   * run, {@link #promptTokens} are the known leading tokens only and {@link #promptLength} is the
   * estimate; after it, the whole prompt's.
   */
  interface RoutedAhead extends Routed {
    /**
     * Encodes the prompt's new text and records the whole prompt in the chosen backend's index view,
     * pinned as the lease has gone so far: confirmed if its first token came, released or taken back
     * if the request already ended. Leaves the prompt for its conversation's next turn as routing
     * does. Call once, on any thread (it encodes: a body worker), while the request's body is
     * unchanged. If encoding fails (a template error) it throws, and nothing is recorded.
     */
    void record();
  }

  /** Registers a backend with its KV capacity in tokens (re-adding updates the capacity). */
  void addBackend(BackendId backend, long capacityTokens);

  /** Removes a backend and its index view at once. */
  void removeBackend(BackendId backend);

  /**
   * Routes {@code view} to one of {@code healthy}, records the prompt in the chosen backend's index
   * view and takes a load lease.
   *
   * @throws IllegalStateException if no backend of {@code healthy} is registered
   */
  Routed route(RequestView view, Collection<BackendId> healthy);

  /**
   * As {@link #route(RequestView, Collection)} for a prompt already in tokens (simulator, token-id
   * prompts).
   *
   * @param sessionKey the request's session key, or {@code null}
   * @throws IllegalStateException if no backend of {@code healthy} is registered
   */
  Routed route(int[] promptTokens, String sessionKey, Collection<BackendId> healthy);

  /**
   * As {@link #route(int[], String, Collection)} in the index namespace {@code namespace} ({@link
   * PrefixIndex#namespace(String, String)} of the request's model and adapter): the prompt matches
   * and is recorded only among pages of the same namespace.
   *
   * @throws IllegalStateException if no backend of {@code healthy} is registered
   */
  Routed route(int[] promptTokens, String sessionKey, long namespace, Collection<BackendId> healthy);

  /**
   * How much of {@code view}'s prompt routing it would encode afresh, in code points ({@link
   * dev.kvroute.core.tokenize.PromptTokenizer#uncachedCodePoints}); {@code 0} when the policy reads
   * no prompt. The proxy routes a prompt with much to encode off its event loop, so that one new
   * conversation's tokenizing does not hold up every other connection of the loop. The default
   * answers {@code 0}. Thread-safe.
   */
  default long uncachedCodePoints(RequestView view) {
    return 0;
  }

  /**
   * Routes {@code view} on what the router knows of its prompt without encoding its new text ({@link
   * dev.kvroute.core.tokenize.PromptTokenizer#knownLead}): the match of its known leading tokens (all
   * the index can match of it, unless its new text repeats a prompt the token caches let go of), the
   * policy's choice with the prompt's estimated length, and a load lease charging the estimated
   * tokens less the predicted cached ones. The prompt enters the chosen backend's index view only when
   * {@link RoutedAhead#record} runs. For a prompt with much new text whose encoding would wait for
   * others' (a burst of new conversations), so that it is forwarded without that wait. {@code null}
   * when the policy reads no prefix match or the tokenizer cannot tell what it knows (the default):
   * route it with {@link #route(RequestView, long, Collection)}. Thread-safe.
   *
   * @throws IllegalStateException if no backend of {@code healthy} is registered
   */
  default RoutedAhead routeAhead(RequestView view, long namespace, Collection<BackendId> healthy) {
    return null;
  }

  /**
   * Whether routing asks for every chat message's {@link dev.kvroute.core.request.TextHash}: a
   * request parser then hashes message texts as it reads them, in the same pass ({@link
   * dev.kvroute.core.request.RequestParser#create(String, String, boolean)}), and otherwise leaves
   * them to be hashed when (if ever) asked for. The default: whenever the policy reads the prompt.
   */
  default boolean asksForMessageHashes() {
    return policy().reads(null) != dev.kvroute.core.policy.PromptReads.NONE;
  }

  /**
   * As {@link #route(RequestView, Collection)} in the index namespace {@code namespace}. The default
   * tokenizes and routes the tokens.
   *
   * @throws IllegalStateException if no backend of {@code healthy} is registered
   */
  default Routed route(RequestView view, long namespace, Collection<BackendId> healthy) {
    return route(tokens(view), view.sessionKey(), namespace, healthy);
  }

  /**
   * As {@link #explain(int[], String, Collection)} in the index namespace {@code namespace}.
   *
   * @throws IllegalStateException if no backend of {@code healthy} is registered
   */
  Decision explain(int[] promptTokens, String sessionKey, long namespace, Collection<BackendId> healthy);

  /**
   * The decision {@code view} would get now, with no side effect on the index, loads or policy state
   * (see {@link RoutingPolicy#explain}).
   *
   * @throws IllegalStateException if no backend of {@code healthy} is registered
   */
  Decision explain(RequestView view, Collection<BackendId> healthy);

  /**
   * As {@link #explain(RequestView, Collection)} for a prompt already in tokens.
   *
   * @throws IllegalStateException if no backend of {@code healthy} is registered
   */
  Decision explain(int[] promptTokens, String sessionKey, Collection<BackendId> healthy);

  /** Tokenizes {@code view}'s prompt as the index sees it (segment-cached). */
  int[] tokens(RequestView view);

  /** The prefix index (e.g. to append a finished response's tokens to a backend's view). */
  PrefixIndex index();

  /** The load tracker leases come from. */
  LoadTracker loads();

  /** The routing policy. */
  RoutingPolicy policy();
}
