package dev.kvroute.bench.workload;

import java.util.random.RandomGenerator;

/** The random distributions of the workloads, drawn from a caller's seeded generator. */
final class Draws {
  private Draws() {}

  /** Lognormal given by its mean and log-space sigma: {@code mu = ln(mean) - sigma^2 / 2}. */
  static double lognormalWithMean(RandomGenerator random, double mean, double sigma) {
    double mu = Math.log(mean) - sigma * sigma / 2;
    return Math.exp(mu + sigma * random.nextGaussian());
  }

  /** Lognormal given by its median and log-space sigma: {@code mu = ln(median)}. */
  static double lognormalWithMedian(RandomGenerator random, double median, double sigma) {
    return Math.exp(Math.log(median) + sigma * random.nextGaussian());
  }

  /** Exponential with the given mean (0 gives 0). */
  static double exponential(RandomGenerator random, double mean) {
    return mean == 0 ? 0 : -mean * Math.log(1 - random.nextDouble());
  }

  /** A positive count: {@code x} rounded to the nearest integer, at least 1. */
  static int count(double x) {
    return (int) Math.max(1, Math.min(Integer.MAX_VALUE, Math.round(x)));
  }
}
