package dev.kvroute.proxy;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A recording TCP relay for tests: every connection accepted on {@link #uri()} is piped to the target
 * and the bytes the target sends back are recorded per connection, so a test can compare what a
 * backend wrote on the wire with what the proxy relayed.
 */
final class TcpTap implements AutoCloseable {
  private final ServerSocket server;
  private final String targetHost;
  private final int targetPort;
  private final List<ByteArrayOutputStream> fromTarget = new CopyOnWriteArrayList<>();
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();

  TcpTap(URI target) throws IOException {
    this.targetHost = target.getHost();
    this.targetPort = target.getPort();
    this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread acceptor = new Thread(this::accept, "tcp-tap-accept");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  URI uri() {
    return URI.create("http://127.0.0.1:" + server.getLocalPort());
  }

  /** Bytes the target sent on each connection so far, in connection order. */
  List<byte[]> recorded() {
    return fromTarget.stream().map(ByteArrayOutputStream::toByteArray).toList();
  }

  private void accept() {
    while (!server.isClosed()) {
      try {
        Socket client = server.accept();
        Socket upstream = new Socket(targetHost, targetPort);
        sockets.add(client);
        sockets.add(upstream);
        ByteArrayOutputStream record = new ByteArrayOutputStream();
        fromTarget.add(record);
        pump(client.getInputStream(), upstream.getOutputStream(), null, upstream);
        pump(upstream.getInputStream(), client.getOutputStream(), record, client);
      } catch (IOException e) {
        return;
      }
    }
  }

  private static void pump(InputStream in, OutputStream out, ByteArrayOutputStream record, Socket peer) {
    Thread t = new Thread(() -> {
      byte[] buf = new byte[8192];
      try {
        int n;
        while ((n = in.read(buf)) >= 0) {
          if (record != null) {
            synchronized (record) {
              record.write(buf, 0, n);
            }
          }
          out.write(buf, 0, n);
          out.flush();
        }
      } catch (IOException ignored) {
        // either side closed
      } finally {
        try {
          peer.close();
        } catch (IOException ignored) {
          // closing
        }
      }
    }, "tcp-tap-pump");
    t.setDaemon(true);
    t.start();
  }

  @Override
  public void close() throws IOException {
    server.close();
    for (Socket s : sockets) {
      s.close();
    }
  }
}
