package dev.kvroute.core.policy;

/** Arg-min with random tie-breaking: never by list order. */
final class Ties {
  private Ties() {}

  /**
   * The index minimising {@code primary}, then {@code secondary} among those; a uniform draw among
   * any that remain tied. {@code secondary} may be {@code null}.
   */
  static int argMin(long[] primary, long[] secondary, Draws draws) {
    int n = primary.length;
    int[] tied = new int[n];
    int count = 0;
    long best1 = Long.MAX_VALUE;
    long best2 = Long.MAX_VALUE;
    for (int i = 0; i < n; i++) {
      long p = primary[i];
      long s = secondary == null ? 0 : secondary[i];
      if (p < best1 || (p == best1 && s < best2)) {
        best1 = p;
        best2 = s;
        count = 0;
      }
      if (p == best1 && s == best2) {
        tied[count++] = i;
      }
    }
    return count == 1 ? tied[0] : tied[draws.nextInt(count)];
  }

  /** The index minimising {@code cost}; a uniform draw among exact ties. */
  static int argMin(double[] cost, Draws draws) {
    int n = cost.length;
    int[] tied = new int[n];
    int count = 0;
    double best = Double.POSITIVE_INFINITY;
    for (int i = 0; i < n; i++) {
      if (cost[i] < best) {
        best = cost[i];
        count = 0;
      }
      if (cost[i] == best) {
        tied[count++] = i;
      }
    }
    return count == 1 ? tied[0] : tied[draws.nextInt(count)];
  }
}
