package dev.kvroute.proxy;

import dev.kvroute.proxy.config.AdminConfig;
import dev.kvroute.proxy.config.LimitConfig;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;

/**
 * Builds an admin connection's pipeline:
 *
 * <pre>
 *   "codec"      HttpServerCodec     the proxy's header and request-line limits
 *   "timeouts"   AdminTimeouts       admin.idleTimeout, admin.readTimeout
 *   "aggregator" RequestAggregator   Host / Transfer-Encoding / target checks, the bearer token
 *                                    (401 on the head, before any body is read), admin.maxBodyBytes (413)
 *   "admin"      AdminHandler        the admin routes
 * </pre>
 *
 * <p>Thread-safe (stateless; shared by every admin connection).
 */
final class AdminInitializer extends ChannelInitializer<SocketChannel> {
  private final ProxyContext px;
  private final io.netty.channel.group.ChannelGroup connections;

  /** @param connections where each accepted connection is kept until it closes (for the shutdown) */
  AdminInitializer(ProxyContext px, io.netty.channel.group.ChannelGroup connections) {
    this.px = px;
    this.connections = connections;
  }

  @Override
  protected void initChannel(SocketChannel ch) {
    connections.add(ch);
    AdminConfig admin = px.config().admin();
    LimitConfig limits = px.config().limits();
    byte[] token = admin.token() == null ? null : sha256(admin.token());
    ch.pipeline()
        .addLast("codec", new io.netty.handler.codec.http.HttpServerCodec(new HttpDecoderConfig()
            .setMaxInitialLineLength(limits.maxInitialLineBytes())
            .setMaxHeaderSize(limits.maxHeaderBytes())))
        .addLast("timeouts", new AdminTimeouts(admin.idleTimeout(), admin.readTimeout()))
        .addLast("aggregator", new RequestAggregator(admin.maxBodyBytes(), head -> authenticate(head, token)))
        .addLast("admin", new AdminHandler(px));
  }

  /**
   * 401 unless {@code head} carries {@code Authorization: Bearer <token>} (the scheme in any case,
   * RFC 9110 §11.1); {@code null} to accept. The SHA-256 digests of the given and the expected token
   * are compared with {@link MessageDigest#isEqual} (constant time, and the same time whatever the
   * given token's length).
   *
   * @param tokenDigest the SHA-256 digest of the admin token, or {@code null} when there is none
   */
  static RejectedRequest authenticate(HttpRequest head, byte[] tokenDigest) {
    if (tokenDigest == null) {
      return null;
    }
    String auth = head.headers().get(HttpHeaderNames.AUTHORIZATION);
    boolean ok = auth != null && auth.length() >= 7 && auth.regionMatches(true, 0, "Bearer ", 0, 7)
        && MessageDigest.isEqual(sha256(auth.substring(7).trim()), tokenDigest);
    return ok ? null
        : new RejectedRequest(HttpResponseStatus.UNAUTHORIZED, "missing or wrong bearer token", "Bearer");
  }

  static byte[] sha256(String s) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java platform has SHA-256", e);
    }
  }
}
