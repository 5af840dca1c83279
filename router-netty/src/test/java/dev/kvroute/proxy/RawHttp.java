package dev.kvroute.proxy;

import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A raw HTTP/1.1 client over one socket, for tests that need exact control over what is sent
 * (chunked uploads, {@code Expect}, oversized headers, pipelining) and exact sight of what comes back.
 */
final class RawHttp implements Closeable {
  /** One response as read off the wire. */
  record Response(int status, String statusLine, Map<String, List<String>> headers, byte[] body, boolean chunked) {
    String header(String name) {
      List<String> v = headers.get(name.toLowerCase(Locale.ROOT));
      return v == null ? null : v.get(0);
    }

    String bodyText() {
      return new String(body, StandardCharsets.UTF_8);
    }
  }

  final Socket socket;
  private final InputStream in;
  private final OutputStream out;

  RawHttp(int port) throws IOException {
    socket = new Socket("127.0.0.1", port);
    socket.setSoTimeout(10_000);
    in = socket.getInputStream();
    out = socket.getOutputStream();
  }

  /** Reads responses from recorded bytes (no socket). */
  RawHttp(InputStream recorded) {
    socket = null;
    in = recorded;
    out = OutputStream.nullOutputStream();
  }

  RawHttp send(String text) throws IOException {
    return send(text.getBytes(StandardCharsets.UTF_8));
  }

  RawHttp send(byte[] bytes) throws IOException {
    out.write(bytes);
    out.flush();
    return this;
  }

  /** Reads one response (status line, headers, body by Content-Length, chunked, or to EOF). */
  Response read() throws IOException {
    String statusLine = line();
    int status = Integer.parseInt(statusLine.split(" ")[1]);
    Map<String, List<String>> headers = new LinkedHashMap<>();
    String l;
    while (!(l = line()).isEmpty()) {
      int colon = l.indexOf(':');
      headers.computeIfAbsent(l.substring(0, colon).trim().toLowerCase(Locale.ROOT), k -> new ArrayList<>())
          .add(l.substring(colon + 1).trim());
    }
    if (status < 200) {
      return new Response(status, statusLine, headers, new byte[0], false);
    }
    List<String> te = headers.get("transfer-encoding");
    List<String> cl = headers.get("content-length");
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    boolean chunked = te != null && te.get(0).equalsIgnoreCase("chunked");
    if (chunked) {
      while (true) {
        String size = line();
        int n = Integer.parseInt(size.split(";")[0].trim(), 16);
        if (n == 0) {
          while (!line().isEmpty()) {
            // trailers
          }
          break;
        }
        body.write(exactly(n));
        if (!line().isEmpty()) {
          throw new IOException("bad chunk terminator");
        }
      }
    } else if (cl != null) {
      body.write(exactly(Integer.parseInt(cl.get(0))));
    } else if (status != 204 && status != 304) {
      body.write(in.readAllBytes());
    }
    return new Response(status, statusLine, headers, body.toByteArray(), chunked);
  }

  /** Whether the server closed the connection (reads EOF within the socket timeout). */
  boolean closedByPeer() {
    try {
      return in.read() < 0;
    } catch (IOException e) {
      return true;
    }
  }

  byte[] exactly(int n) throws IOException {
    byte[] b = in.readNBytes(n);
    if (b.length < n) {
      throw new EOFException("expected " + n + " bytes, got " + b.length);
    }
    return b;
  }

  String line() throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    int c;
    while ((c = in.read()) >= 0) {
      if (c == '\n') {
        byte[] bytes = b.toByteArray();
        int len = bytes.length > 0 && bytes[bytes.length - 1] == '\r' ? bytes.length - 1 : bytes.length;
        return new String(bytes, 0, len, StandardCharsets.ISO_8859_1);
      }
      b.write(c);
    }
    throw new EOFException("connection closed");
  }

  InputStream in() {
    return in;
  }

  @Override
  public void close() throws IOException {
    if (socket != null) {
      socket.close();
    }
  }
}
