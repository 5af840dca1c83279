package dev.kvroute.engine.model;

/** Dynamo mocker's fitted polynomials; see {@link CostModel#dynamo()}. Immutable. */
final class DynamoCostModel implements CostModel {
  static final DynamoCostModel INSTANCE = new DynamoCostModel();

  private DynamoCostModel() {}

  @Override
  public long prefillNanos(int requests, int uncachedTokens) {
    if (uncachedTokens <= 0) {
      return 0;
    }
    double t = uncachedTokens;
    double ms = 4.209989e-07 * t * t + 1.518344e-02 * t + 16.50142;
    return Math.round(ms * 1e6);
  }

  @Override
  public long decodeNanos(int decodes, double kvUsage) {
    if (decodes == 0) {
      return 0;
    }
    double u = Math.min(1.0, Math.max(0.0, kvUsage));
    double ms = Math.max(1.0, -25.74 * u * u + 54.01 * u + 5.74);
    return Math.round(ms * 1e6);
  }

  @Override
  public String toString() {
    return "dynamo(prefill 4.21e-7·T² + 1.518e-2·T + 16.5 ms, decode -25.74·u² + 54.01·u + 5.74 ms)";
  }
}
