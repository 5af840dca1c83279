package dev.kvroute.cli;

import dev.kvroute.proxy.config.ConfigException;
import dev.kvroute.proxy.config.ConfigLoader;
import dev.kvroute.proxy.config.ProxyConfig;
import java.nio.file.Path;
import java.util.Map;

/**
 * Loads a command's configuration so that a Kubernetes-discovery mistake made with flags is reported
 * in flags: {@code --k8s-selector} without {@code --k8s-port} (and no {@code discovery.kubernetes.port}
 * in the file) names {@code --k8s-port}, where the config record names its YAML key. Stateless.
 */
final class K8sFlags {
  private K8sFlags() {}

  /**
   * {@link ConfigLoader#load}, re-wording the record's "discovery.kubernetes.port: none" when the
   * selector came from {@code --k8s-selector} and the port from nowhere.
   *
   * @param selector the {@code --k8s-selector} flag, or null
   * @param port the {@code --k8s-port} flag, or null
   * @throws ConfigException as {@link ConfigLoader#load}
   */
  static ProxyConfig load(Path config, Map<String, Object> overrides, String selector, String port) {
    try {
      return ConfigLoader.load(config, overrides);
    } catch (ConfigException e) {
      if (selector != null && port == null && String.valueOf(e.getMessage()).startsWith("discovery.kubernetes.port: none")) {
        throw new ConfigException("--k8s-selector " + selector + " without --k8s-port (expected: the engines' container"
            + " port, by name or number, e.g. --k8s-port http, or discovery.kubernetes.port in --config)");
      }
      throw e;
    }
  }
}
