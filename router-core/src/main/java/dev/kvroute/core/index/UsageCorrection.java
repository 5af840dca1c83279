package dev.kvroute.core.index;

/**
 * The rule by which an engine's report of a served prompt's cached tokens ({@code
 * usage.prompt_tokens_details.cached_tokens}, vLLM's count of the prompt tokens it found in its prefix
 * cache when it admitted the request) corrects the approximate index: when the engine had fewer whole
 * pages of the prompt than the index believed the chosen backend held when it routed it, the engine had
 * evicted the rest behind the router's back (other routers' or clients' traffic, a smaller cache than
 * configured, a cache that keeps less), and the backend's view of that prompt is trimmed to what the
 * engine had ({@link PrefixIndex.Pin#release(int)}).
 *
 * <p>vLLM never reports a whole prompt as cached: it recomputes at least the last token, so at most
 * {@code (promptTokens - 1) / blockSize} blocks count as cached. A belief beyond that bound cannot be
 * contradicted by the report and is capped to it first, so a page-aligned prompt the engine held
 * entirely is not trimmed by its last page. (The mock engine counts the same way.)
 *
 * <p>Stateless and thread-safe.
 */
public final class UsageCorrection {
  private UsageCorrection() {}

  /**
   * The whole pages of the prompt the backend's view should keep after the engine's report, or
   * {@code -1} when the report does not contradict the belief (no correction).
   *
   * @param promptTokens the prompt's length in tokens, {@code >= 0}
   * @param believedTokens the tokens of the prompt the index believed the backend held at routing
   *     (the routing decision's matched tokens)
   * @param engineCachedTokens the engine's reported cached tokens; negative: not reported (no
   *     correction)
   * @param pageSizeTokens the index's page size, {@code > 0}
   * @throws IllegalArgumentException if {@code pageSizeTokens <= 0}
   */
  public static int keepPages(int promptTokens, int believedTokens, int engineCachedTokens, int pageSizeTokens) {
    if (pageSizeTokens <= 0) {
      throw new IllegalArgumentException("pageSizeTokens: " + pageSizeTokens + " (expected: > 0)");
    }
    if (engineCachedTokens < 0 || promptTokens <= 0) {
      return -1;
    }
    int reportable = (promptTokens - 1) / pageSizeTokens;
    int believed = Math.min(Math.max(believedTokens, 0) / pageSizeTokens, reportable);
    int had = engineCachedTokens / pageSizeTokens;
    return had < believed ? had : -1;
  }
}
