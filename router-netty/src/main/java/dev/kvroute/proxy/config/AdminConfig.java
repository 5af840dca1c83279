package dev.kvroute.proxy.config;

/**
 * The admin API listener ({@code /admin/backends}, {@code /admin/explain}).
 *
 * <p>Immutable and thread-safe.
 *
 * @param port TCP port; {@code 0} picks an ephemeral port, {@code -1} disables the admin API
 * @param bind address to listen on; loopback by default so that only the host can change backends
 * @param token when set, every admin request must carry {@code Authorization: Bearer <token>}
 *     (401 otherwise); {@code null} for no authentication
 */
public record AdminConfig(int port, String bind, String token) {
  public AdminConfig {
    Checks.port("port", port, true);
    Checks.nonBlank("bind", bind);
    if (token != null && token.isBlank()) {
      token = null;
    }
  }

  /** Port 8081 on 127.0.0.1, no token. */
  public static AdminConfig defaults() {
    return new AdminConfig(8081, "127.0.0.1", null);
  }

  /** Whether the admin listener is started. */
  public boolean enabled() {
    return port >= 0;
  }
}
