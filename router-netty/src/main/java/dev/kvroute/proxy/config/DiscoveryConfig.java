package dev.kvroute.proxy.config;

import com.fasterxml.jackson.annotation.JsonInclude;

/**
 * Where backends come from besides the static {@code backends} list and the admin API. Static and
 * admin-API backends keep working beside discovery; discovery adds, drains and removes only the
 * backends it added.
 *
 * <p>Immutable and thread-safe.
 *
 * @param kubernetes pods watched in a Kubernetes namespace; {@code null} (the default, the section
 *     absent) means no Kubernetes discovery
 */
public record DiscoveryConfig(@JsonInclude(JsonInclude.Include.NON_NULL) KubernetesDiscoveryConfig kubernetes) {

  /** No discovery. */
  public static DiscoveryConfig off() {
    return new DiscoveryConfig(null);
  }

  /** Whether any discovery is configured. */
  public boolean enabled() {
    return kubernetes != null;
  }
}
