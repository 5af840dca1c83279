package dev.kvroute.engine.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** Test client: JDK HttpClient for ordinary calls, a raw socket to see HTTP chunks and early closes. */
final class Http {
  static final ObjectMapper JSON = new ObjectMapper();
  static final HttpClient CLIENT =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(5)).build();

  private Http() {}

  static HttpResponse<String> get(String url) throws IOException, InterruptedException {
    return CLIENT.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(20)).GET().build(),
        HttpResponse.BodyHandlers.ofString());
  }

  static HttpResponse<String> post(String url, String body, String... headers)
      throws IOException, InterruptedException {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(30))
        .header("content-type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body));
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return CLIENT.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  static JsonNode json(String s) throws IOException {
    return JSON.readTree(s);
  }

  /** The value of the first sample of {@code name} whose labels contain {@code labelPart}. */
  static double metric(String text, String name, String labelPart) {
    for (String line : text.split("\n")) {
      if (line.startsWith(name + "{") && line.contains(labelPart)) {
        return Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
      }
    }
    throw new AssertionError("no sample " + name + " with " + labelPart + " in\n" + text);
  }

  static double metric(String url, String name) throws IOException, InterruptedException {
    return metric(get(url + "/metrics").body(), name, "");
  }

  /** The SSE events of a body: the text after {@code data: } of each event. */
  static List<String> events(String body) {
    List<String> out = new ArrayList<>();
    for (String e : body.split("\n\n")) {
      if (!e.isEmpty()) {
        if (!e.startsWith("data: ")) {
          throw new AssertionError("not an SSE data event: " + e);
        }
        out.add(e.substring(6));
      }
    }
    return out;
  }

  /** A response read from a raw socket. */
  static final class Raw {
    int status = -1;
    final Map<String, String> headers = new LinkedHashMap<>();
    /** HTTP chunks in arrival order (chunked responses), else one element with the body. */
    final List<byte[]> chunks = new ArrayList<>();
    boolean terminated;
    boolean eof;
    boolean timedOut;

    String body() {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      chunks.forEach(out::writeBytes);
      return out.toString(StandardCharsets.UTF_8);
    }
  }

  /** An open raw connection. */
  static final class Conn implements AutoCloseable {
    final Socket socket;
    final InputStream in;
    final OutputStream out;

    Conn(String url, int readTimeoutMillis) throws IOException {
      URI u = URI.create(url);
      socket = new Socket(u.getHost(), u.getPort());
      socket.setSoTimeout(readTimeoutMillis);
      in = socket.getInputStream();
      out = socket.getOutputStream();
    }

    void send(String method, String path, String body, String... headers) throws IOException {
      StringBuilder sb = new StringBuilder();
      byte[] b = body == null ? new byte[0] : body.getBytes(StandardCharsets.UTF_8);
      sb.append(method).append(' ').append(path).append(" HTTP/1.1\r\nHost: localhost\r\n");
      sb.append("Content-Type: application/json\r\nContent-Length: ").append(b.length).append("\r\n");
      for (int i = 0; i < headers.length; i += 2) {
        sb.append(headers[i]).append(": ").append(headers[i + 1]).append("\r\n");
      }
      sb.append("\r\n");
      out.write(sb.toString().getBytes(StandardCharsets.UTF_8));
      out.write(b);
      out.flush();
    }

    /**
     * Reads a response: headers, then chunks until the terminating chunk, {@code maxChunks} chunks,
     * EOF, or the read timeout.
     */
    Raw read(int maxChunks) throws IOException {
      Raw r = new Raw();
      try {
        String statusLine = line();
        if (statusLine == null) {
          r.eof = true;
          return r;
        }
        r.status = Integer.parseInt(statusLine.split(" ")[1]);
        String h;
        while ((h = line()) != null && !h.isEmpty()) {
          int c = h.indexOf(':');
          r.headers.put(h.substring(0, c).trim().toLowerCase(Locale.ROOT), h.substring(c + 1).trim());
        }
        if ("chunked".equalsIgnoreCase(r.headers.get("transfer-encoding"))) {
          while (r.chunks.size() < maxChunks) {
            String size = line();
            if (size == null) {
              r.eof = true;
              return r;
            }
            int n = Integer.parseInt(size.trim(), 16);
            if (n == 0) {
              line();
              r.terminated = true;
              return r;
            }
            byte[] data = in.readNBytes(n);
            if (data.length < n) {
              r.eof = true;
              r.chunks.add(data);
              return r;
            }
            r.chunks.add(data);
            line();
          }
        } else {
          int len = Integer.parseInt(r.headers.getOrDefault("content-length", "0"));
          byte[] data = in.readNBytes(len);
          r.chunks.add(data);
          r.terminated = data.length == len;
          r.eof = data.length < len;
        }
      } catch (SocketTimeoutException e) {
        r.timedOut = true;
      }
      return r;
    }

    /** True if the server closed the connection (EOF) before the read timeout. */
    boolean closedByPeer() throws IOException {
      try {
        return in.read() == -1;
      } catch (SocketTimeoutException e) {
        return false;
      } catch (IOException e) {
        return true;
      }
    }

    private String line() throws IOException {
      ByteArrayOutputStream b = new ByteArrayOutputStream();
      int c;
      while ((c = in.read()) != -1) {
        if (c == '\n') {
          String s = b.toString(StandardCharsets.ISO_8859_1);
          return s.endsWith("\r") ? s.substring(0, s.length() - 1) : s;
        }
        b.write(c);
      }
      return b.size() == 0 ? null : b.toString(StandardCharsets.ISO_8859_1);
    }

    @Override
    public void close() throws IOException {
      socket.close();
    }
  }
}
