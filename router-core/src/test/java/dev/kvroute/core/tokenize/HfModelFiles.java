package dev.kvroute.core.tokenize;

import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The real tokenizer files the comparison tests use, as {@code docker/ci/setup-tokenizers.sh}
 * installs them: {@code $KVROUTE_TOKENIZERS_DIR} (default {@code ~/.cache/kvroute-tokenizers})
 * {@code /qwen3} and {@code /llama3_1}, and Python with transformers. Absent, a test skips with a
 * message; with {@code CI=true} it fails instead, since CI installs them.
 */
public final class HfModelFiles {
  private HfModelFiles() {}

  /** The tokenizer directory of {@code name} ({@code qwen3}, {@code llama3_1}), or skip/fail. */
  public static Path model(String name) {
    String base = System.getenv("KVROUTE_TOKENIZERS_DIR");
    Path dir = (base == null || base.isBlank()
        ? Path.of(System.getProperty("user.home"), ".cache", "kvroute-tokenizers")
        : Path.of(base)).resolve(name);
    require(Files.isRegularFile(dir.resolve("tokenizer.json"))
            && Files.isRegularFile(dir.resolve("tokenizer_config.json")),
        "no " + name + " tokenizer in " + dir + " (run docker/ci/setup-tokenizers.sh)");
    return dir;
  }

  /** Skips the test with {@code message} unless {@code ok}; under {@code CI=true} fails instead. */
  public static void require(boolean ok, String message) {
    if (ok) {
      return;
    }
    if ("true".equalsIgnoreCase(System.getenv("CI"))) {
      fail(message + " (CI=true: docker/ci/setup-tokenizers.sh should have installed it)");
    }
    assumeTrue(false, message);
  }

  /**
   * Runs {@code src/test/python/hf_chat_reference.py} for {@code modelDir} into {@code out} unless
   * {@code out} is already there and newer than the script; skips (or fails on CI) when Python's
   * transformers is missing.
   */
  public static Path reference(Path modelDir, Path out, int count) throws IOException, InterruptedException {
    Path script = Path.of("src", "test", "python", "hf_chat_reference.py").toAbsolutePath();
    if (Files.isRegularFile(out)
        && Files.getLastModifiedTime(out).compareTo(Files.getLastModifiedTime(script)) > 0
        && Files.getLastModifiedTime(out).compareTo(Files.getLastModifiedTime(modelDir.resolve("tokenizer.json"))) > 0) {
      return out;
    }
    Process check = new ProcessBuilder("python3", "-c", "import transformers, tokenizers, jinja2")
        .redirectErrorStream(true).start();
    check.getInputStream().readAllBytes();
    boolean done = check.waitFor(120, TimeUnit.SECONDS);
    require(done && check.exitValue() == 0,
        "python3 with transformers, tokenizers and jinja2 is not installed (run docker/ci/setup-tokenizers.sh)");
    Files.createDirectories(out.getParent());
    Path tmp = out.resolveSibling(out.getFileName() + ".tmp");
    Process p = new ProcessBuilder(List.of("python3", script.toString(), modelDir.toString(), tmp.toString(),
        Integer.toString(count)))
        .redirectErrorStream(true).start();
    String log = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    if (!p.waitFor(10, TimeUnit.MINUTES) || p.exitValue() != 0) {
      fail("hf_chat_reference.py failed:\n" + log);
    }
    Files.move(tmp, out, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    return out;
  }
}
