/**
 * The Mooncake trace: reading its JSON lines, turning hashed blocks into tokens, and replaying it
 * through the simulator or real HTTP.
 *
 * <p>May use the other bench packages (demo, load, report, sim, workload), router-core, mock-engine's
 * engine model and Jackson.
 */
package dev.kvroute.bench.trace;
