package dev.kvroute.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.net.URL;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * The {@code healthcheck} command: GETs one URL and exits 0 when the answer is a 2xx status, 1
 * otherwise (connection refused, timeout, any other status). It is the container image's {@code
 * HEALTHCHECK}, so it needs no shell, curl or wget in the image: it runs on the image's JRE alone.
 *
 * <p>The URL comes from the argument, else the {@code KVROUTE_HEALTH_URL} environment variable, else
 * {@value #DEFAULT_URL}. The timeout covers connecting and reading, each. {@link #main} runs this
 * command directly, without loading the other commands, so a health probe starts in well under a
 * second on a cold JVM.
 *
 * <p>Not shared between threads; one instance per invocation.
 */
@Command(
    name = "healthcheck",
    mixinStandardHelpOptions = true,
    description = {
      "GET a health URL; exit 0 on a 2xx answer, 1 otherwise (for container health checks).",
      "URL: the argument, else $KVROUTE_HEALTH_URL, else " + HealthCheckCommand.DEFAULT_URL + "."
    })
public final class HealthCheckCommand implements Callable<Integer> {

  /** The URL probed when neither an argument nor {@code KVROUTE_HEALTH_URL} gives one. */
  public static final String DEFAULT_URL = "http://127.0.0.1:8080/health";

  @Parameters(arity = "0..1", paramLabel = "URL", description = "the URL to GET")
  String url;

  @Option(
      names = "--timeout-millis",
      defaultValue = "3000",
      description = "connect and read timeout, each, in milliseconds (default ${DEFAULT-VALUE})")
  int timeoutMillis;

  @Option(names = "--quiet", description = "print nothing, only set the exit status")
  boolean quiet;

  /** Runs the command on its own (the Dockerfile's HEALTHCHECK entry point). */
  public static void main(String[] args) {
    System.exit(new CommandLine(new HealthCheckCommand()).execute(args));
  }

  @Override
  public Integer call() {
    String target = url != null ? url : System.getenv().getOrDefault("KVROUTE_HEALTH_URL", DEFAULT_URL);
    try {
      int status = get(target);
      boolean healthy = status / 100 == 2;
      report(healthy, target + " -> HTTP " + status);
      return healthy ? 0 : 1;
    } catch (IOException | IllegalArgumentException e) {
      report(false, target + " -> " + e);
      return 1;
    }
  }

  private int get(String target) throws IOException {
    URL parsed = URI.create(target).toURL();
    HttpURLConnection connection = (HttpURLConnection) parsed.openConnection();
    connection.setConnectTimeout(timeoutMillis);
    connection.setReadTimeout(timeoutMillis);
    connection.setInstanceFollowRedirects(false);
    try {
      int status = connection.getResponseCode();
      InputStream body = status < 400 ? connection.getInputStream() : connection.getErrorStream();
      if (body != null) {
        try (body) {
          body.transferTo(OutputStream.nullOutputStream());
        }
      }
      return status;
    } finally {
      connection.disconnect();
    }
  }

  private void report(boolean healthy, String line) {
    if (!quiet) {
      (healthy ? System.out : System.err).println((healthy ? "healthy: " : "unhealthy: ") + line);
    }
  }
}
