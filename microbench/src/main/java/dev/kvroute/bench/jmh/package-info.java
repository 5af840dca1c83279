/**
 * JMH benchmarks of router-core ({@code PrefixIndexBenchmark}, {@code RoutingBenchmark}) and their
 * CPU-time and memory companions; run them from {@code microbench/target/microbench.jar}
 * ({@code docs/bench.md}, "Microbenchmarks").
 *
 * <p>May use router-core and JMH only; not part of the shipped jar.
 */
package dev.kvroute.bench.jmh;
