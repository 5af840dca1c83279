package dev.kvroute.core.policy;

/** 64-bit hashing for the hash ring and first-page keys (FNV-1a folded through MurmurHash3's fmix64). */
final class Hashing {
  private static final long FNV_OFFSET = 0xcbf29ce484222325L;
  private static final long FNV_PRIME = 0x100000001b3L;

  private Hashing() {}

  /** MurmurHash3's 64-bit finalizer: spreads every input bit over every output bit. */
  static long mix64(long h) {
    h ^= h >>> 33;
    h *= 0xff51afd7ed558ccdL;
    h ^= h >>> 33;
    h *= 0xc4ceb9fe1a85ec53L;
    h ^= h >>> 33;
    return h;
  }

  static long hash64(String s) {
    long h = FNV_OFFSET;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      h = (h ^ (c & 0xFF)) * FNV_PRIME;
      h = (h ^ (c >>> 8)) * FNV_PRIME;
    }
    return mix64(h ^ s.length());
  }

  static long hash64(int[] tokens, int from, int to) {
    long h = FNV_OFFSET;
    for (int i = from; i < to; i++) {
      h = (h ^ tokens[i]) * FNV_PRIME;
      h = mix64(h);
    }
    return mix64(h ^ (to - from));
  }
}
