package dev.kvroute.core.index;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.Ticker;

/** Test wrapper: runs {@link PrefixIndex#checkInvariants()} after every operation. */
final class CheckedPrefixIndex implements PrefixIndex {
  final RadixPrefixIndex delegate;

  CheckedPrefixIndex(int pageSizeTokens, Ticker ticker) {
    this.delegate = (RadixPrefixIndex) PrefixIndex.radix(pageSizeTokens, ticker);
    delegate.checkInvariants();
  }

  @Override
  public void addBackend(BackendId backend, long capacityTokens) {
    try {
      delegate.addBackend(backend, capacityTokens);
    } finally {
      delegate.checkInvariants();
    }
  }

  @Override
  public void removeBackend(BackendId backend) {
    delegate.removeBackend(backend);
    delegate.checkInvariants();
  }

  @Override
  public void forget(BackendId backend) {
    delegate.forget(backend);
    delegate.checkInvariants();
  }

  @Override
  public PrefixMatch match(int[] tokens) {
    PrefixMatch match = delegate.match(tokens);
    delegate.checkInvariants();
    return match;
  }

  @Override
  public Prompt prompt(int[] tokens) {
    return delegate.prompt(tokens);
  }

  @Override
  public PrefixMatch match(Prompt prompt) {
    PrefixMatch match = delegate.match(prompt);
    delegate.checkInvariants();
    return match;
  }

  @Override
  public void insert(BackendId backend, Prompt prompt) {
    try {
      delegate.insert(backend, prompt);
    } finally {
      delegate.checkInvariants();
    }
  }

  @Override
  public Pin insertAndPin(BackendId backend, Prompt prompt) {
    Pin pin;
    try {
      pin = delegate.insertAndPin(backend, prompt);
    } finally {
      delegate.checkInvariants();
    }
    return new Pin() {
      @Override
      public void confirm() {
        try {
          pin.confirm();
        } finally {
          delegate.checkInvariants();
        }
      }

      @Override
      public void release() {
        try {
          pin.release();
        } finally {
          delegate.checkInvariants();
        }
      }

      @Override
      public void release(int engineCachedTokens) {
        try {
          pin.release(engineCachedTokens);
        } finally {
          delegate.checkInvariants();
        }
      }

      @Override
      public void abandon() {
        try {
          pin.abandon();
        } finally {
          delegate.checkInvariants();
        }
      }
    };
  }

  @Override
  public void insert(BackendId backend, int[] tokens) {
    try {
      delegate.insert(backend, tokens);
    } finally {
      delegate.checkInvariants();
    }
  }

  @Override
  public long sizeTokens(BackendId backend) {
    return delegate.sizeTokens(backend);
  }

  @Override
  public long estimatedBytes() {
    return delegate.estimatedBytes();
  }

  @Override
  public int pageSizeTokens() {
    return delegate.pageSizeTokens();
  }

  @Override
  public void checkInvariants() {
    delegate.checkInvariants();
  }

  long correctedPages() {
    return delegate.correctedPages();
  }

  int nodeCount() {
    return delegate.nodeCount();
  }
}
