/**
 * The end-to-end demo: the seed workload through real HTTP on a bundled fleet (mock engines and a
 * kvroute router in this process, {@link dev.kvroute.bench.demo.BundledFleet}), beside the simulator's
 * prediction.
 *
 * <p>May use the other bench packages, router-core, mock-engine and router-netty.
 */
package dev.kvroute.bench.demo;
