/**
 * Run reports: per-request records, per-policy figures, the simulator-agreement check, and the
 * text, Markdown, HTML and JSON writers.
 *
 * <p>May use the JDK, Jackson and HdrHistogram; no networking.
 */
package dev.kvroute.bench.report;
