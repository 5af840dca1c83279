/**
 * The discrete-event simulator: the same router-core policies and index in front of engine models on
 * a virtual clock ({@link dev.kvroute.bench.sim.Simulator}, {@link dev.kvroute.bench.sim.VirtualClock}),
 * closed- and open-loop, with diagnostics.
 *
 * <p>May use router-core, mock-engine's engine model, and the workload and report packages; no
 * networking, no wall clock.
 */
package dev.kvroute.bench.sim;
