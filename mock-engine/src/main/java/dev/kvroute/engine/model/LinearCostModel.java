package dev.kvroute.engine.model;

/** The linear cost model; see {@link CostModel#linear}. Immutable. */
final class LinearCostModel implements CostModel {
  private final double prefillTokensPerSecond;
  private final double prefillOverheadSeconds;
  private final double decodeTokensPerSecond;
  private final long overheadNanos;
  private final long interTokenNanos;

  LinearCostModel(double prefillTokensPerSecond, double prefillOverheadSeconds, double decodeTokensPerSecond) {
    if (!(prefillTokensPerSecond > 0) || Double.isInfinite(prefillTokensPerSecond)) {
      throw new IllegalArgumentException(
          "prefillTokensPerSecond: " + prefillTokensPerSecond + " (expected: > 0)");
    }
    if (!(prefillOverheadSeconds >= 0) || Double.isInfinite(prefillOverheadSeconds)) {
      throw new IllegalArgumentException(
          "prefillOverheadSeconds: " + prefillOverheadSeconds + " (expected: >= 0)");
    }
    if (!(decodeTokensPerSecond > 0) || Double.isInfinite(decodeTokensPerSecond)) {
      throw new IllegalArgumentException(
          "decodeTokensPerSecond: " + decodeTokensPerSecond + " (expected: > 0)");
    }
    this.prefillTokensPerSecond = prefillTokensPerSecond;
    this.prefillOverheadSeconds = prefillOverheadSeconds;
    this.decodeTokensPerSecond = decodeTokensPerSecond;
    this.overheadNanos = Math.round(prefillOverheadSeconds * 1e9);
    this.interTokenNanos = Math.round(1e9 / decodeTokensPerSecond);
  }

  @Override
  public long prefillNanos(int requests, int uncachedTokens) {
    return requests * overheadNanos + Math.round(uncachedTokens * 1e9 / prefillTokensPerSecond);
  }

  @Override
  public long decodeNanos(int decodes, double kvUsage) {
    return decodes == 0 ? 0 : interTokenNanos;
  }

  @Override
  public String toString() {
    return "linear(prefill " + prefillTokensPerSecond + " tok/s + " + prefillOverheadSeconds
        + " s/request, decode " + decodeTokensPerSecond + " tok/s)";
  }
}
