/**
 * The proxy's configuration as immutable records bound by Jackson from YAML ({@link
 * dev.kvroute.proxy.config.ProxyConfig} and one record per section), validated in their compact
 * constructors, loaded and merged with flag overrides by {@link dev.kvroute.proxy.config.ConfigLoader};
 * {@code docs/configuration.md} documents every key.
 *
 * <p>May use router-core's policy configuration, the JDK and Jackson; nothing of Netty.
 */
package dev.kvroute.proxy.config;
