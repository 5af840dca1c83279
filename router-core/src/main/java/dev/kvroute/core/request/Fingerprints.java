package dev.kvroute.core.request;

import java.security.SecureRandom;

/**
 * The mixing of {@link PromptSegment#fingerprint}: MurmurHash3's 64-bit finalizer over values
 * combined with a key drawn once per JVM from {@link SecureRandom}, so that which texts share a
 * fingerprint differs between processes. Thread-safe (stateless).
 */
final class Fingerprints {
  /** The process's key. */
  static final long KEY = new SecureRandom().nextLong();

  private Fingerprints() {}

  /** MurmurHash3's fmix64. */
  static long mix(long h) {
    h ^= h >>> 33;
    h *= 0xff51afd7ed558ccdL;
    h ^= h >>> 33;
    h *= 0xc4ceb9fe1a85ec53L;
    return h ^ (h >>> 33);
  }

  /**
   * The fingerprint of {@code b[start, end)}: its length and escape flag, and its first, last and
   * two middle 8-byte little-endian words (fewer bytes, zero-padded, when shorter than 8).
   */
  static long ofBytes(byte[] b, int start, int end, boolean escaped) {
    int n = end - start;
    long h = mix(KEY ^ ((long) n << 1 | (escaped ? 1 : 0)));
    if (n >= 8) {
      h = mix(h ^ word(b, start));
      h = mix(h ^ word(b, start + (n - 8) / 3));
      h = mix(h ^ word(b, start + 2 * (n - 8) / 3));
      return mix(h ^ word(b, end - 8));
    }
    long w = 0;
    for (int i = 0; i < n; i++) {
      w |= (b[start + i] & 0xFFL) << (8 * i);
    }
    return mix(h ^ w);
  }

  private static long word(byte[] b, int at) {
    return (long) JsonStrings.LONG_LE.get(b, at);
  }
}
