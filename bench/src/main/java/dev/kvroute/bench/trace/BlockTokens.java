package dev.kvroute.bench.trace;

import dev.kvroute.core.tokenize.SingleTokenVocabulary;
import java.util.Objects;

/**
 * Expands a Mooncake request's block ids into prompt token ids: block id {@code b} becomes the same 512
 * tokens wherever it appears, so requests that share leading ids share exactly those leading tokens, and
 * requests whose ids differ diverge at the first differing block. Because the expansion depends only on
 * the id, the property holds at any KV page size that divides the shared length (the engines' 16-token
 * blocks, the router's pages).
 *
 * <p>Tokens {@code 2j} and {@code 2j + 1} of block {@code b} come from one 64-bit value {@code h =
 * mix((seed + b × 2^32 + j) × 0x9E3779B97F4A7C15)}, where {@code mix} is SplitMix64's finalizer (Steele,
 * Lea and Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014): token {@code 2j} is
 * {@code tokenIds[floor(hi32(h) × n / 2^32)]} and token {@code 2j + 1} {@code tokenIds[floor(lo32(h) × n
 * / 2^32)]}, with {@code n}
 * the number of token ids. With the token ids of a {@link SingleTokenVocabulary} every token is an
 * ordinary word of the tokenizer's vocabulary, valid for the engine and the router alike. The last block
 * of a prompt whose length is not a multiple of 512 is the first {@code lastBlockTokens} tokens of its
 * block's expansion.
 *
 * <p>Immutable and thread-safe.
 */
public final class BlockTokens {
  /** The default seed of the expansion. */
  public static final long DEFAULT_SEED = 0x6d6f6f6e63616b65L; // "mooncake"

  private static final long GOLDEN = 0x9E3779B97F4A7C15L;

  private final int[] tokenIds;
  private final long seed;

  /**
   * @param tokenIds the token ids blocks are drawn from (copied); at least one
   * @param seed seed of the expansion: another seed gives other tokens for every block
   */
  public BlockTokens(int[] tokenIds, long seed) {
    Objects.requireNonNull(tokenIds, "tokenIds");
    if (tokenIds.length == 0) {
      throw new IllegalArgumentException("tokenIds: empty (expected: at least one token id)");
    }
    this.tokenIds = tokenIds.clone();
    this.seed = seed;
  }

  /** Blocks drawn from the words of {@code vocabulary}, with {@link #DEFAULT_SEED}. */
  public static BlockTokens of(SingleTokenVocabulary vocabulary) {
    int[] ids = new int[vocabulary.size()];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = vocabulary.tokenId(i);
    }
    return new BlockTokens(ids, DEFAULT_SEED);
  }

  /** Blocks from the same token ids under another seed: no block shares a token sequence with this one's. */
  public BlockTokens withSeed(long newSeed) {
    return new BlockTokens(tokenIds, newSeed);
  }

  /** The prompt of {@code request}: its blocks' tokens, {@code inputLength} of them. */
  public int[] prompt(MooncakeRequest request) {
    int[] out = new int[request.inputLength()];
    int[] ids = request.hashIds();
    int block = MooncakeRequest.BLOCK_TOKENS;
    for (int i = 0; i < ids.length; i++) {
      int offset = i * block;
      write(ids[i], out, offset, Math.min(block, out.length - offset));
    }
    return out;
  }

  /**
   * Writes the first {@code length} tokens of block {@code blockId} to {@code dest} from {@code offset}.
   *
   * @throws IndexOutOfBoundsException if {@code length} exceeds 512 or {@code dest} is too short
   */
  public void write(long blockId, int[] dest, int offset, int length) {
    if (length < 0 || length > MooncakeRequest.BLOCK_TOKENS) {
      throw new IndexOutOfBoundsException("length: " + length + " (expected: 0..512)");
    }
    Objects.checkFromIndexSize(offset, length, dest.length);
    long base = seed + (blockId << 32);
    long n = tokenIds.length;
    int i = 0;
    for (; i + 1 < length; i += 2) {
      long h = mix((base + (i >> 1)) * GOLDEN);
      dest[offset + i] = tokenIds[(int) (((h >>> 32) * n) >>> 32)];
      dest[offset + i + 1] = tokenIds[(int) (((h & 0xFFFF_FFFFL) * n) >>> 32)];
    }
    if (i < length) {
      long h = mix((base + (i >> 1)) * GOLDEN);
      dest[offset + i] = tokenIds[(int) (((h >>> 32) * n) >>> 32)];
    }
  }

  /** SplitMix64's output function (variant 13 of Stafford's mixers). */
  private static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }
}
