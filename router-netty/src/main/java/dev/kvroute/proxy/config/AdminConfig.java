package dev.kvroute.proxy.config;

import java.time.Duration;
import java.util.Locale;

/**
 * The admin API listener ({@code /admin/backends}, {@code /admin/explain}, {@code /admin/config}).
 *
 * <p>Whoever reaches the admin port can add a backend of their own and so receive a copy of every
 * prompt; so the admin API is on loopback by default, and a configuration that puts it on any other
 * address without a token is refused (naming {@code admin.token}) unless {@code insecureNoToken}
 * says that is intended.
 *
 * <p>Immutable and thread-safe.
 *
 * @param port TCP port; {@code 0} picks an ephemeral port, {@code -1} disables the admin API
 * @param bind address to listen on; loopback ({@code 127.0.0.1}) by default so that only the host can
 *     change backends
 * @param token when set, every admin request must carry {@code Authorization: Bearer <token>}
 *     (compared in constant time; 401 otherwise, answered on the request head before any body is
 *     read); {@code null} for no authentication
 * @param insecureNoToken accept a {@code bind} other than a loopback address ({@code 127.0.0.0/8},
 *     {@code ::1}, {@code localhost}) without a token; the router logs a warning. Default false
 * @param maxBodyBytes largest admin request body (413 beyond it, also for chunked bodies). Default
 *     1 MiB, enough for {@code /admin/explain} of a prompt of about 250k tokens
 * @param readTimeout longest time from a request's head to the end of its body; beyond it the
 *     client gets 408 and the connection closes. Default 10s
 * @param idleTimeout longest wait, on a new connection or after a response, for the next request's
 *     head to be complete; beyond it the connection closes (so neither idle connections nor
 *     slow-header clients hold the port). Default 30s
 */
public record AdminConfig(
    int port,
    String bind,
    String token,
    boolean insecureNoToken,
    long maxBodyBytes,
    Duration readTimeout,
    Duration idleTimeout) {

  /** Default {@link #maxBodyBytes}: 1 MiB. */
  public static final long DEFAULT_MAX_BODY_BYTES = 1L << 20;

  public AdminConfig {
    Checks.port("port", port, true);
    Checks.nonBlank("bind", bind);
    if (token != null && token.isBlank()) {
      token = null;
    }
    if (maxBodyBytes <= 0 || maxBodyBytes > LimitConfig.MAX_BODY_BYTES_LIMIT) {
      throw new IllegalArgumentException(
          "maxBodyBytes: " + maxBodyBytes + " (expected: 1.." + LimitConfig.MAX_BODY_BYTES_LIMIT + ")");
    }
    Checks.positive("readTimeout", readTimeout);
    Checks.positive("idleTimeout", idleTimeout);
    if (port >= 0 && token == null && !insecureNoToken && !isLoopback(bind)) {
      throw new IllegalArgumentException("token: none with the admin API on " + bind
          + ", where anyone who reaches the port could add a backend and receive every prompt (expected: "
          + "--admin-token or KVROUTE_ADMIN_TOKEN, a loopback --admin-bind such as 127.0.0.1, "
          + "or --admin-insecure-no-token to accept this)");
    }
  }

  /** Port {@code port} on {@code bind}, with {@code token}, and every other setting at its default. */
  public AdminConfig(int port, String bind, String token) {
    this(port, bind, token, false, DEFAULT_MAX_BODY_BYTES, Duration.ofSeconds(10), Duration.ofSeconds(30));
  }

  /** Port 8081 on 127.0.0.1, no token, 1 MiB bodies, 10s read and 30s idle timeouts. */
  public static AdminConfig defaults() {
    return new AdminConfig(8081, "127.0.0.1", null);
  }

  /** Whether the admin listener is started. */
  public boolean enabled() {
    return port >= 0;
  }

  /** A copy on {@code port}. */
  public AdminConfig withPort(int port) {
    return new AdminConfig(port, bind, token, insecureNoToken, maxBodyBytes, readTimeout, idleTimeout);
  }

  /** A copy with {@code token} ({@code null}: none). */
  public AdminConfig withToken(String token) {
    return new AdminConfig(port, bind, token, insecureNoToken, maxBodyBytes, readTimeout, idleTimeout);
  }

  /** Whether the admin API would be open to other hosts without a token (what {@code insecureNoToken} allows). */
  public boolean openWithoutToken() {
    return enabled() && token == null && !isLoopback(bind);
  }

  /**
   * Whether {@code bind} is a loopback address: {@code localhost}, an IPv4 literal in
   * {@code 127.0.0.0/8} or the IPv6 literal {@code ::1} (in any notation). No name is resolved, so any
   * other host name counts as not loopback.
   */
  public static boolean isLoopback(String bind) {
    String b = bind.trim().toLowerCase(Locale.ROOT);
    if (b.startsWith("[") && b.endsWith("]")) {
      b = b.substring(1, b.length() - 1);
    }
    if (b.equals("localhost")) {
      return true;
    }
    byte[] ip = io.netty.util.NetUtil.createByteArrayFromIpAddressString(b);
    if (ip == null) {
      return false;
    }
    if (ip.length == 4) {
      return ip[0] == 127;
    }
    for (int i = 0; i < 15; i++) {
      if (ip[i] != 0) {
        return false;
      }
    }
    return ip[15] == 1;
  }
}
