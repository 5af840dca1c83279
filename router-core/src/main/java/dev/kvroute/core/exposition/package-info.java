/**
 * Reading what engines expose on {@code /metrics}: {@link dev.kvroute.core.exposition.PrometheusText},
 * a reader of the Prometheus text exposition format, and its {@link
 * dev.kvroute.core.exposition.Sample}s. The router's health checks and the bench's engine counters both
 * read engines through it.
 *
 * <p>May use the JDK only.
 */
package dev.kvroute.core.exposition;
