package dev.kvroute.core.tokenize;

import java.io.IOException;
import java.nio.file.Path;
import java.time.InstantSource;
import java.util.Locale;
import java.util.Objects;

/**
 * Which tokens the router computes for a model, as written in {@code --tokenizer} and the
 * configuration's {@code tokenizers} map:
 *
 * <ul>
 *   <li>a tiktoken encoding name ({@code o200k_base}, the default; {@code cl100k_base},
 *       {@code p50k_base}, {@code r50k_base}): approximate tokens over the router's fixed
 *       ChatML-like rendering ({@link PromptTokenizer});
 *   <li>{@code hf:PATH}: the model's own {@code tokenizer.json} (PATH is the file or its
 *       directory) and chat template from the same directory: the engine's exact tokens;
 *   <li>{@code engine}: ask the engine ({@code POST /tokenize}) and cache by message prefix.
 * </ul>
 *
 * <p>Immutable and thread-safe.
 *
 * @param kind which of the three
 * @param value the encoding name, the path (as given), or {@code "engine"}
 */
public record TokenizerSpec(Kind kind, String value) {
  /** The three kinds of tokenizer. */
  public enum Kind {
    /** A jtokkit (tiktoken) encoding over the router's own chat rendering. */
    TIKTOKEN,
    /** A HuggingFace tokenizer.json and the model's chat template. */
    HUGGINGFACE,
    /** The engine's own {@code /tokenize} endpoint. */
    ENGINE
  }

  /** The zero-configuration default, {@code o200k_base}. */
  public static final TokenizerSpec DEFAULT = new TokenizerSpec(Kind.TIKTOKEN, Tokenizer.DEFAULT_ENCODING);

  public TokenizerSpec {
    Objects.requireNonNull(kind, "kind");
    if (value == null || value.isBlank()) {
      throw new IllegalArgumentException("tokenizer: blank (expected: an encoding name, hf:PATH or engine)");
    }
  }

  /**
   * Reads a spec: {@code engine}, {@code hf:PATH}, or an encoding name.
   *
   * @throws IllegalArgumentException if it is blank, {@code hf:} has no path, or the encoding is not
   *     one jtokkit knows
   */
  public static TokenizerSpec parse(String text) {
    if (text == null || text.isBlank()) {
      throw new IllegalArgumentException("tokenizer: blank (expected: an encoding name, hf:PATH or engine)");
    }
    String s = text.strip();
    if (s.equalsIgnoreCase("engine")) {
      return new TokenizerSpec(Kind.ENGINE, "engine");
    }
    if (s.regionMatches(true, 0, "hf:", 0, 3)) {
      String path = s.substring(3);
      if (path.isBlank()) {
        throw new IllegalArgumentException("tokenizer: " + s + " (expected: hf:PATH, PATH a tokenizer.json "
            + "or the directory holding it)");
      }
      return new TokenizerSpec(Kind.HUGGINGFACE, path);
    }
    String name = s.toLowerCase(Locale.ROOT);
    if (!name.equals("o200k_base") && !name.equals("cl100k_base") && !name.equals("p50k_base")
        && !name.equals("r50k_base") && !name.equals("p50k_edit")) {
      throw new IllegalArgumentException("tokenizer: " + s + " (expected: o200k_base, cl100k_base, "
          + "p50k_base, r50k_base, hf:PATH or engine)");
    }
    return new TokenizerSpec(Kind.TIKTOKEN, name);
  }

  /**
   * Loads the prompt tokenizer of a {@link Kind#TIKTOKEN} or {@link Kind#HUGGINGFACE} spec, with a
   * piece cache of {@code maxCacheBytes} (for hf, and as much again for its cache of rendered
   * conversation prefixes). A HuggingFace directory must hold {@code tokenizer.json}
   * and a chat template; a failure says which file and what was wrong.
   *
   * @param clock the time {@code strftime_now} renders in chat templates
   * @throws IllegalArgumentException if a file is missing or corrupt, or the spec is {@code engine}
   *     (that one needs an HTTP client: see the proxy)
   * @throws IOException if a file cannot be read
   */
  public PromptTokenizer load(InstantSource clock, long maxCacheBytes) throws IOException {
    switch (kind) {
      case TIKTOKEN:
        return PromptTokenizer.create(Tokenizer.jtokkit(value), maxCacheBytes);
      case HUGGINGFACE: {
        Path path = Path.of(value);
        HfTokenizer tokenizer = HfTokenizer.load(path);
        Path dir = java.nio.file.Files.isDirectory(path) ? path : path.toAbsolutePath().getParent();
        ChatTemplate template = ChatTemplate.load(dir, HfSpecialTokens.read(dir), clock);
        return new TemplatePromptTokenizer(tokenizer, template, maxCacheBytes);
      }
      default:
        throw new IllegalArgumentException("tokenizer: engine is served by the proxy's engine client");
    }
  }

  @Override
  public String toString() {
    return kind == Kind.HUGGINGFACE ? "hf:" + value : value;
  }
}
