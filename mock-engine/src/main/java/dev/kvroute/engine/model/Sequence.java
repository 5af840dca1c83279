package dev.kvroute.engine.model;

/**
 * One request's state inside an engine, in vLLM's terms: {@code numTokens} tokens are known (prompt
 * plus generated so far), {@code computed} of them have KV; a step that brings {@code computed} up to
 * {@code numTokens} samples the next output token. Blocks held: indices {@code [0, cachedHeld)} are
 * cached blocks, the next {@code ownedHeld} are owned.
 *
 * <p>Not thread-safe; owned by one engine.
 */
final class Sequence {
  final EngineRequest request;
  final long id;
  final long arrivalNanos;
  final long order;
  /** Prompt then output tokens. */
  final int[] tokens;
  final int promptLen;
  final int outputLen;
  final int blockSize;
  private final long[] hashes;
  private final long rootHash;
  private int hashesKnown;
  final BlockPool.Block[] blocks;

  int cachedHeld;
  int ownedHeld;
  int numTokens;
  int computed;
  int generated;
  /** Tokens scheduled in the step in flight ({@code CONTINUOUS}); 0 when not scheduled. */
  int scheduledTokens;
  /** Whether the prefix cache was looked up (counted in the prefix stats) once already. */
  boolean started;
  long firstScheduledNanos = -1;
  int cachedTokens;
  boolean finished;
  /** Time of the next output token ({@code FCFS_PREFILL} decode). */
  long nextTokenNanos;

  Sequence(EngineRequest request, long arrivalNanos, long order, int blockSize) {
    this.request = request;
    this.id = request.id();
    this.arrivalNanos = arrivalNanos;
    this.order = order;
    this.blockSize = blockSize;
    this.promptLen = request.promptTokens().length;
    this.outputLen = request.outputTokens().length;
    this.tokens = new int[promptLen + outputLen];
    System.arraycopy(request.promptTokens(), 0, tokens, 0, promptLen);
    System.arraycopy(request.outputTokens(), 0, tokens, promptLen, outputLen);
    this.hashes = new long[tokens.length / blockSize];
    this.blocks = new BlockPool.Block[(tokens.length + blockSize - 1) / blockSize];
    this.numTokens = promptLen;
    this.rootHash = BlockHashes.root(request.loraName());
  }

  /** The chained key of full block {@code i}. */
  long hash(int i) {
    while (hashesKnown <= i) {
      long parent = hashesKnown == 0 ? rootHash : hashes[hashesKnown - 1];
      hashes[hashesKnown] = BlockHashes.next(parent, tokens, hashesKnown * blockSize, blockSize);
      hashesKnown++;
    }
    return hashes[i];
  }

  int heldBlocks() {
    return cachedHeld + ownedHeld;
  }

  /** Whether the next scheduled token is a plain decode (one new token after the first output). */
  boolean isDecoding() {
    return generated > 0 && numTokens - computed == 1;
  }

  static int blocksFor(int tokens, int blockSize) {
    return (tokens + blockSize - 1) / blockSize;
  }
}
