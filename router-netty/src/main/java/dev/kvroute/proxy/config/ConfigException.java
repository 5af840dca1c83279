package dev.kvroute.proxy.config;

/**
 * A configuration that cannot be used: an unreadable file, an unknown key, a value of the wrong type
 * or out of range. The message names the option by its YAML path, shows the value and says what was
 * expected, e.g. {@code timeouts.connect: 0s (expected: > 0)}.
 */
public final class ConfigException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public ConfigException(String message) {
    super(message);
  }

  public ConfigException(String message, Throwable cause) {
    super(message, cause);
  }
}
