package dev.kvroute.core.index;

/**
 * The pins one {@link RadixPrefixIndex#insertAndPin} took: the first {@code pages} pages of
 * {@code prompt} in {@code view}, of which the last {@code created} were added by that insert, at
 * {@code walkTime}, with the earlier pages' last use before it ({@code oldTimes}) and every page's
 * entry in the view ({@code entries}, so that its end looks up no page hashes). Ended once; a no-op
 * if the view was removed meanwhile (even if its backend was added again: that is a new view). What
 * confirming, releasing and abandoning do to the view is in {@link PrefixIndex.Pin}; the index does
 * it under its write lock.
 *
 * <p>Thread-safe through the index's lock.
 */
final class PagePin implements PrefixIndex.Pin {
  final RadixPrefixIndex index;
  final RecencyView view;
  final HashedPrompt prompt;
  final int pages;
  final int created;
  final long walkTime;
  /** Each of the first {@code pages - created} pages' last use before the insert (for a correction). */
  final long[] oldTimes;
  /** Each of the first {@code pages} pages' entry in {@code view}, valid while its entries are not renumbered. */
  final int[] entries;
  /** {@code view}'s {@link RecencyView#renumberings} when {@code entries} were recorded. */
  final int renumberings;
  boolean ended; // guarded by the index's write lock

  PagePin(RadixPrefixIndex index, RecencyView view, HashedPrompt prompt, int pages, int created,
      long walkTime, long[] oldTimes, int[] entries) {
    this.index = index;
    this.entries = entries;
    this.renumberings = view.renumberings;
    this.oldTimes = oldTimes;
    this.view = view;
    this.prompt = prompt;
    this.pages = pages;
    this.created = created;
    this.walkTime = walkTime;
  }

  @Override
  public void confirm() {
    if (view.provisionalPin != this) {
      // the usual case under load: a later change already settled the view; no write lock taken
      // (an unsynchronized read: a stale answer either way only delays the settling to that change)
      return;
    }
    index.confirm(this);
  }

  @Override
  public void release() {
    index.end(this, false);
  }

  @Override
  public void release(int engineCachedTokens) {
    index.end(this, false, engineCachedTokens);
  }

  @Override
  public void abandon() {
    index.end(this, true);
  }
}
