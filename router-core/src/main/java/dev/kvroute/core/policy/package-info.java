/**
 * Routing policies ({@link dev.kvroute.core.policy.RoutingPolicy}): round-robin, random,
 * least-loaded, power-of-two, sticky, cache-aware (SGLang's rule), cost; the context they decide on
 * ({@link dev.kvroute.core.policy.RoutingContext}, {@link dev.kvroute.core.policy.Candidate}), the
 * decision with the rule that made it ({@link dev.kvroute.core.policy.Decision}), and their thresholds
 * ({@link dev.kvroute.core.policy.PolicyConfig}).
 *
 * <p>May use {@code dev.kvroute.core} and {@code dev.kvroute.core.load} and the JDK; a policy reads only
 * its context and its injected random source.
 */
package dev.kvroute.core.policy;
