package dev.kvroute.bench.cli;

import dev.kvroute.bench.relay.NettyRelay;
import java.net.InetSocketAddress;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvroute relay}: the proxy-overhead harness's Netty floor ({@link NettyRelay}), serving until
 * the process is stopped. Hidden from the usage: a benchmark baseline, not a router.
 *
 * <p>Not thread-safe (a picocli command object).
 */
@Command(
    name = "relay",
    hidden = true,
    mixinStandardHelpOptions = true,
    description = {
      "A bare Netty HTTP/1.1 relay (round robin, no routing, no metrics): the proxy-overhead harness's floor.",
      "Example: kvroute relay --port 8090 --backend http://127.0.0.1:8001 --backend http://127.0.0.1:8002"
    },
    sortOptions = false)
public final class RelayCommand implements Callable<Integer> {
  @Option(names = "--bind", paramLabel = "ADDRESS", description = "Address to listen on (default: ${DEFAULT-VALUE}).")
  String bind = "127.0.0.1";

  @Option(names = "--port", paramLabel = "PORT", required = true, description = "Port to listen on.")
  int port;

  @Option(names = "--backend", paramLabel = "URL", required = true,
      description = "A backend, http://host:port (no path); repeat for more.")
  List<String> backends;

  @Option(names = "--event-loop-threads", paramLabel = "N", description = "Event loops (default: ${DEFAULT-VALUE}).")
  int threads = 1;

  @Spec CommandSpec spec;

  @Override
  public Integer call() throws InterruptedException {
    List<InetSocketAddress> fleet = new ArrayList<>();
    for (String b : backends) {
      URI u;
      try {
        u = URI.create(b.trim());
      } catch (IllegalArgumentException e) {
        throw new ParameterException(spec.commandLine(), "--backend " + b + " (expected: http://host:port)");
      }
      String path = u.getRawPath();
      if (!"http".equals(u.getScheme()) || u.getHost() == null || u.getPort() < 1
          || path != null && !path.isEmpty() && !path.equals("/") || u.getRawQuery() != null) {
        throw new ParameterException(spec.commandLine(), "--backend " + b + " (expected: http://host:port)");
      }
      fleet.add(new InetSocketAddress(u.getHost(), u.getPort()));
    }
    if (threads < 1 || port < 0 || port > 65535) {
      throw new ParameterException(spec.commandLine(),
          "--port " + port + ", --event-loop-threads " + threads + " (expected: a port 0-65535, at least one thread)");
    }
    NettyRelay relay = NettyRelay.start(bind, port, fleet, threads);
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      relay.close();
      stopped.countDown();
    }, "kvroute-relay-stop"));
    System.out.println("relay listening on " + bind + ":" + relay.port() + " in front of " + fleet);
    stopped.await();
    return 0;
  }
}
