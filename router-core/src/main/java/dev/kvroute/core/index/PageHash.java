package dev.kvroute.core.index;

/**
 * The chained 64-bit identity of a token page: XXH64 (Yann Collet's xxHash64, spec
 * {@code github.com/Cyan4973/xxHash/blob/dev/doc/xxhash_spec.md}) of the page's tokens, each written
 * as 4 little-endian bytes, seeded with the parent page's hash. The first page of a prompt is seeded
 * with {@link #ROOT}. Two pages therefore share a hash only if they have the same tokens and the same
 * chain of ancestors, up to a hash collision.
 *
 * <p>Collision probability: XXH64 passes SMHasher's avalanche and collision tests, so for {@code n}
 * distinct pages alive in an index the chance that any two share a hash is at most about
 * {@code n^2 / 2^65}: 3e-10 for the 1e5 pages of 8 backends x 200K tokens at page 16, 3e-8 for 1e6
 * pages. A collision only makes the index credit a backend with a page it does not hold (a worse
 * routing guess, never a wrong response), and the index additionally rejects a hash hit whose stored
 * parent differs from the expected one. XXH64 is not a cryptographic hash: a client that crafts
 * colliding prompts can at most mislead routing for its own requests' placement.
 *
 * <p>Stateless and thread-safe.
 */
final class PageHash {

  /** Seed of a prompt's first page: the bytes "kvroute!" read as a little-endian long. */
  static final long ROOT = 0x216574756f72766bL;

  private static final long P1 = 0x9E3779B185EBCA87L;
  private static final long P2 = 0xC2B2AE3D27D4EB4FL;
  private static final long P3 = 0x165667B19E3779F9L;
  private static final long P4 = 0x85EBCA77C2B2AE63L;
  private static final long P5 = 0x27D4EB2F165667C5L;

  private PageHash() {}

  /**
   * The seed of a prompt's first page in {@code namespace}: {@link #ROOT} for the default namespace
   * {@code 0}, else XXH64 of the namespace's 8 little-endian bytes seeded with {@code ROOT}, so that
   * the chains of two namespaces share no page hash (up to a collision).
   */
  static long root(long namespace) {
    if (namespace == 0) {
      return ROOT;
    }
    byte[] b = new byte[8];
    for (int i = 0; i < 8; i++) {
      b[i] = (byte) (namespace >>> (8 * i));
    }
    return xxh64(b, ROOT);
  }

  /**
   * XXH64 of {@code tokens[offset, offset + count)} encoded as 4-byte little-endian integers, seeded
   * with {@code parentHash}.
   */
  static long next(long parentHash, int[] tokens, int offset, int count) {
    int end = offset + count;
    int i = offset;
    long h;
    if (count >= 8) { // 32 bytes: at least one stripe of four 8-byte lanes
      long v1 = parentHash + P1 + P2;
      long v2 = parentHash + P2;
      long v3 = parentHash;
      long v4 = parentHash - P1;
      int stripesEnd = end - 7;
      do {
        v1 = round(v1, lane(tokens, i));
        v2 = round(v2, lane(tokens, i + 2));
        v3 = round(v3, lane(tokens, i + 4));
        v4 = round(v4, lane(tokens, i + 6));
        i += 8;
      } while (i < stripesEnd);
      h = Long.rotateLeft(v1, 1) + Long.rotateLeft(v2, 7) + Long.rotateLeft(v3, 12)
          + Long.rotateLeft(v4, 18);
      h = mergeRound(h, v1);
      h = mergeRound(h, v2);
      h = mergeRound(h, v3);
      h = mergeRound(h, v4);
    } else {
      h = parentHash + P5;
    }
    h += 4L * count;
    while (i + 2 <= end) {
      h ^= round(0, lane(tokens, i));
      h = Long.rotateLeft(h, 27) * P1 + P4;
      i += 2;
    }
    if (i < end) {
      h ^= (tokens[i] & 0xFFFFFFFFL) * P1;
      h = Long.rotateLeft(h, 23) * P2 + P3;
    }
    return avalanche(h);
  }

  /** Reference XXH64 over bytes, used by tests to check {@link #next} against published vectors. */
  static long xxh64(byte[] data, long seed) {
    int len = data.length;
    int i = 0;
    long h;
    if (len >= 32) {
      long v1 = seed + P1 + P2;
      long v2 = seed + P2;
      long v3 = seed;
      long v4 = seed - P1;
      do {
        v1 = round(v1, le64(data, i));
        v2 = round(v2, le64(data, i + 8));
        v3 = round(v3, le64(data, i + 16));
        v4 = round(v4, le64(data, i + 24));
        i += 32;
      } while (i <= len - 32);
      h = Long.rotateLeft(v1, 1) + Long.rotateLeft(v2, 7) + Long.rotateLeft(v3, 12)
          + Long.rotateLeft(v4, 18);
      h = mergeRound(h, v1);
      h = mergeRound(h, v2);
      h = mergeRound(h, v3);
      h = mergeRound(h, v4);
    } else {
      h = seed + P5;
    }
    h += len;
    while (i + 8 <= len) {
      h ^= round(0, le64(data, i));
      h = Long.rotateLeft(h, 27) * P1 + P4;
      i += 8;
    }
    if (i + 4 <= len) {
      h ^= (le32(data, i) & 0xFFFFFFFFL) * P1;
      h = Long.rotateLeft(h, 23) * P2 + P3;
      i += 4;
    }
    while (i < len) {
      h ^= (data[i] & 0xFFL) * P5;
      h = Long.rotateLeft(h, 11) * P1;
      i++;
    }
    return avalanche(h);
  }

  private static long lane(int[] tokens, int i) {
    return (tokens[i] & 0xFFFFFFFFL) | ((long) tokens[i + 1] << 32);
  }

  private static long round(long acc, long input) {
    acc += input * P2;
    acc = Long.rotateLeft(acc, 31);
    return acc * P1;
  }

  private static long mergeRound(long acc, long val) {
    acc ^= round(0, val);
    return acc * P1 + P4;
  }

  private static long avalanche(long h) {
    h ^= h >>> 33;
    h *= P2;
    h ^= h >>> 29;
    h *= P3;
    h ^= h >>> 32;
    return h;
  }

  private static long le64(byte[] b, int i) {
    return (le32(b, i) & 0xFFFFFFFFL) | ((long) le32(b, i + 4) << 32);
  }

  private static int le32(byte[] b, int i) {
    return (b[i] & 0xFF) | (b[i + 1] & 0xFF) << 8 | (b[i + 2] & 0xFF) << 16 | (b[i + 3] & 0xFF) << 24;
  }
}
