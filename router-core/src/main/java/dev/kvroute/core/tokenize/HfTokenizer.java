package dev.kvroute.core.tokenize;

import ai.djl.huggingface.tokenizers.Encoding;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import ai.djl.huggingface.tokenizers.jni.TokenizersLibrary;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * A HuggingFace {@code tokenizer.json} through DJL's binding of the Rust {@code tokenizers} crate
 * (the library transformers' fast tokenizers and vLLM use), encoding with {@code
 * add_special_tokens=False} as vLLM does for chat prompts: special tokens appear only where the
 * text (the rendered chat template) spells them.
 *
 * <p>The native library ships inside the DJL jar (linux-x86_64, linux-aarch64, macOS, Windows) and
 * is extracted to DJL's cache directory ({@code ~/.djl.ai}, or {@code DJL_CACHE_DIR}) on first use;
 * {@code ai.djl.offline} is set so that DJL never tries to download one.
 *
 * <p>{@link #splitAfterSpecialTokens} cuts a text right after each added token that the tokenizer
 * matches before normalization ({@code normalized: false}) and that strips no whitespace to its
 * right: the library splits its input at those tokens first and encodes the pieces between them
 * independently, so the tokens of the whole text are the concatenation of the pieces' tokens. That
 * holds unless a piece's encoding depends on its position (a {@code Metaspace} pre-tokenizer or a
 * {@code Prepend} normalizer, which add a prefix to the first piece only); for such tokenizers
 * {@link #splittable()} is false and the text is never cut.
 *
 * <p>{@link #encode} runs in plain Java ({@link ByteLevelBpe}) when the file is a byte-level BPE
 * (Qwen2/3, Llama 3) whose added tokens all match before normalization with no stripping: the text
 * is cut at added tokens (leftmost, longest, as the library matches them), each added token is its
 * id, and the text between them goes through {@link ByteLevelBpe}. That is 10x or more faster than
 * a call into the native library for a chat message. It checks itself against the native library:
 * the first {@value #VERIFY_FIRST} encodings and one in {@value #VERIFY_EVERY} after them are also
 * encoded natively and compared; a difference turns the Java path off for this tokenizer, logs once
 * and answers the native result (see {@link #javaMismatches()}). Text Java cannot reproduce (see
 * {@link ByteLevelBpe#encode}) goes to the native library.
 *
 * <p>Thread-safe (the native tokenizer is immutable once loaded).
 */
final class HfTokenizer implements Tokenizer {
  private static final ObjectMapper MAPPER = new ObjectMapper();
  static final int VERIFY_FIRST = 32;
  static final int VERIFY_EVERY = 256;
  private static final System.Logger LOG = System.getLogger(HfTokenizer.class.getName());

  static {
    if (System.getProperty("ai.djl.offline") == null) {
      System.setProperty("ai.djl.offline", "true");
    }
  }

  private final HuggingFaceTokenizer tokenizer;
  private final String name;
  /** Added tokens that end an independent piece, longest first within each first character. */
  private final String[] boundaryTokens;
  /** Every added token matched before normalization (matching must see them all, leftmost-longest). */
  private final String[] rawAddedTokens;
  /** Added tokens by first character, longest first; null where no token starts with it. */
  private final Map<Character, String[]> byFirstChar;
  private final java.util.BitSet firstChars = new java.util.BitSet(Character.MAX_VALUE + 1);
  private final boolean splittable;
  /** Added tokens that a text may be cut right before: they strip nothing to their left. */
  private final java.util.Set<String> leadTokens;
  /** The longest added token's length in chars. */
  private final int maxAddedChars;
  /** The largest id in the vocabulary or among the added tokens. */
  private final int maxId;
  /** The Java encoder, or null when the file is not a shape it implements. */
  private final ByteLevelBpe bpe;
  /** Added tokens' ids by content (for the Java encoder). */
  private final Map<String, Integer> addedIds;
  private final java.util.concurrent.atomic.AtomicLong javaEncodes = new java.util.concurrent.atomic.AtomicLong();
  private final java.util.concurrent.atomic.AtomicLong javaMismatches = new java.util.concurrent.atomic.AtomicLong();
  private volatile boolean javaOff;

  private HfTokenizer(HuggingFaceTokenizer tokenizer, String name, JsonNode json) {
    this.tokenizer = tokenizer;
    this.name = name;
    List<String> raw = new ArrayList<>();
    List<String> boundaries = new ArrayList<>();
    java.util.Set<String> leads = new java.util.HashSet<>();
    for (JsonNode t : json.path("added_tokens")) {
      String content = t.path("content").asText("");
      if (content.isEmpty() || t.path("normalized").asBoolean(false)) {
        continue;
      }
      raw.add(content);
      if (!t.path("lstrip").asBoolean(false) && !t.path("single_word").asBoolean(false)) {
        leads.add(content);
      }
      if (!t.path("rstrip").asBoolean(false) && !t.path("single_word").asBoolean(false)) {
        boundaries.add(content);
      }
    }
    Comparator<String> longestFirst = Comparator.comparingInt(String::length).reversed();
    raw.sort(longestFirst);
    boundaries.sort(longestFirst);
    this.rawAddedTokens = raw.toArray(String[]::new);
    this.leadTokens = java.util.Set.copyOf(leads);
    this.maxAddedChars = rawAddedTokens.length == 0 ? 0 : rawAddedTokens[0].length();
    this.boundaryTokens = boundaries.toArray(String[]::new);
    Map<Character, List<String>> grouped = new java.util.HashMap<>();
    for (String t : rawAddedTokens) {
      grouped.computeIfAbsent(t.charAt(0), k -> new ArrayList<>()).add(t);
      firstChars.set(t.charAt(0));
    }
    Map<Character, String[]> frozen = new java.util.HashMap<>();
    grouped.forEach((k, v) -> frozen.put(k, v.toArray(String[]::new)));
    this.byFirstChar = Map.copyOf(frozen);
    int max = -1;
    for (JsonNode id : json.path("model").path("vocab")) {
      max = Math.max(max, id.asInt(-1));
    }
    if (json.path("model").path("vocab").isArray()) { // Unigram: a list of [piece, score]
      max = json.path("model").path("vocab").size() - 1;
    }
    for (JsonNode t : json.path("added_tokens")) {
      max = Math.max(max, t.path("id").asInt(-1));
    }
    this.maxId = max;
    String described = json.path("pre_tokenizer").toString() + json.path("normalizer").toString();
    this.splittable = !described.contains("\"Metaspace\"") && !described.contains("\"Prepend\"");
    Map<String, Integer> ids = new java.util.HashMap<>();
    boolean plainAdded = true;
    for (JsonNode t : json.path("added_tokens")) {
      plainAdded &= !t.path("normalized").asBoolean(false) && !t.path("lstrip").asBoolean(false)
          && !t.path("rstrip").asBoolean(false) && !t.path("single_word").asBoolean(false)
          && !t.path("content").asText("").isEmpty();
      ids.put(t.path("content").asText(""), t.path("id").asInt(-1));
    }
    this.addedIds = Map.copyOf(ids);
    this.bpe = plainAdded ? ByteLevelBpe.of(json) : null;
  }

  /**
   * Loads {@code tokenizer.json} ({@code path} is the file or the directory holding it).
   *
   * @throws IllegalArgumentException if there is no such file or the library rejects it
   * @throws IOException if it cannot be read
   */
  static HfTokenizer load(Path path) throws IOException {
    Path file = Files.isDirectory(path) ? path.resolve("tokenizer.json") : path;
    if (!Files.isRegularFile(file)) {
      throw new IllegalArgumentException(path + ": no tokenizer.json (expected a tokenizer.json file "
          + "or a directory holding one)");
    }
    JsonNode json;
    try {
      json = MAPPER.readTree(file.toFile());
    } catch (IOException e) {
      throw new IllegalArgumentException(file + ": not a tokenizer.json (" + e.getMessage() + ")", e);
    }
    if (json == null || !json.isObject() || !json.has("model")) {
      throw new IllegalArgumentException(file + ": not a tokenizer.json (expected an object with a model)");
    }
    HuggingFaceTokenizer native_;
    try {
      native_ = HuggingFaceTokenizer.newInstance(file, Map.of(
          "addSpecialTokens", "false", "truncation", "false", "padding", "false", "maxLength", "-1"));
    } catch (RuntimeException e) {
      throw new IllegalArgumentException(file + ": the tokenizers library rejected it (" + e.getMessage() + ")", e);
    }
    Path dir = file.toAbsolutePath().getParent();
    return new HfTokenizer(native_, "hf:" + (dir == null ? file : dir.getFileName()), json);
  }

  @Override
  public int[] encode(String text) {
    if (text.isEmpty()) {
      return new int[0];
    }
    if (bpe == null || javaOff) {
      return ids(text, false);
    }
    int[] fast = encodeInJava(text);
    if (fast == null) {
      return ids(text, false);
    }
    long n = javaEncodes.incrementAndGet();
    if (n <= VERIFY_FIRST || n % VERIFY_EVERY == 0) {
      int[] native_ = ids(text, false);
      if (!java.util.Arrays.equals(fast, native_)) {
        if (javaMismatches.getAndIncrement() == 0) {
          LOG.log(System.Logger.Level.WARNING, "tokenizer " + name + ": the Java byte-level BPE gave other "
              + "tokens than the native library for a " + text.length() + "-char text; encoding natively "
              + "from now on");
        }
        javaOff = true;
        return native_;
      }
    }
    return fast;
  }

  /** The ids of {@code text} from the native library alone ({@code add_special_tokens=False}). */
  int[] encodeNatively(String text) {
    return text.isEmpty() ? new int[0] : ids(text, false);
  }

  /**
   * The ids of {@code text} from {@link ByteLevelBpe} with the added tokens cut out first; null when
   * this tokenizer has no Java encoder or Java cannot reproduce the text.
   */
  int[] encodeInJava(String text) {
    if (bpe == null) {
      return null;
    }
    int len = text.length();
    int[] out = null;
    int n = 0;
    int start = 0;
    int i = 0;
    while (i <= len) {
      String match = null;
      if (i < len && firstChars.get(text.charAt(i))) {
        match = longestAt(text, i);
      }
      if (match == null && i < len) {
        i++;
        continue;
      }
      if (i > start) { // the text before the added token (or the end)
        int[] part = bpe.encode(text.substring(start, i));
        if (part == null) {
          return null;
        }
        if (out == null && match == null) {
          return part;
        }
        out = append(out, n, part, part.length);
        n += part.length;
      }
      if (match == null) {
        break;
      }
      out = append(out, n, new int[] {addedIds.get(match)}, 1);
      n++;
      i += match.length();
      start = i;
    }
    return out == null ? new int[0] : (out.length == n ? out : java.util.Arrays.copyOf(out, n));
  }

  private static int[] append(int[] out, int n, int[] part, int count) {
    if (out == null) {
      out = new int[Math.max(16, count * 2)];
    } else if (n + count > out.length) {
      out = java.util.Arrays.copyOf(out, Math.max(2 * out.length, n + count));
    }
    System.arraycopy(part, 0, out, n, count);
    return out;
  }

  /** Whether this tokenizer encodes in Java ({@link ByteLevelBpe}; false once it has disagreed). */
  boolean encodesInJava() {
    return bpe != null && !javaOff;
  }

  /** Checked Java encodings that differed from the native library (the Java path is off after one). */
  long javaMismatches() {
    return javaMismatches.get();
  }

  /**
   * The ids of {@code text} straight from the native library: DJL's {@code encode} also copies the
   * type ids, token strings, offsets and masks out of the library, which costs several times the
   * encoding itself for a short text. Same encoding ({@code HuggingFaceTokenizer.encode} with no
   * prefix space, lower-casing or accent stripping, none of which this tokenizer is built with).
   */
  private int[] ids(String text, boolean addSpecialTokens) {
    TokenizersLibrary lib = TokenizersLibrary.LIB;
    long encoding = lib.encode(tokenizer.getHandle(), text, addSpecialTokens);
    long[] ids;
    try {
      ids = lib.getTokenIds(encoding);
    } finally {
      lib.deleteEncoding(encoding);
    }
    int[] out = new int[ids.length];
    for (int i = 0; i < ids.length; i++) {
      out[i] = (int) ids[i];
    }
    return out;
  }


  /** The tokens of {@code text} with the tokenizer's post-processor ({@code add_special_tokens=True}). */
  int[] encodeWithSpecialTokens(String text) {
    return ids(text, true);
  }


  @Override
  public String decode(int[] tokenIds) {
    long[] ids = new long[tokenIds.length];
    for (int i = 0; i < ids.length; i++) {
      if (tokenIds[i] < 0 || tokenIds[i] > maxId) {
        throw new IllegalArgumentException("token id " + tokenIds[i] + " (expected: 0 to " + maxId + ")");
      }
      ids[i] = tokenIds[i];
    }
    return tokenizer.decode(ids, false);
  }

  @Override
  public String name() {
    return name;
  }

  /** Whether cutting a text after special tokens keeps its tokens (see the type's documentation). */
  boolean splittable() {
    return splittable;
  }

  /**
   * The offsets just after each boundary token in {@code text}, found as the library matches added
   * tokens (leftmost, longest), in increasing order; empty when the tokenizer is not
   * {@link #splittable()}.
   */
  int[] splitAfterSpecialTokens(String text) {
    if (!splittable || boundaryTokens.length == 0) {
      return new int[0];
    }
    int[] cuts = new int[16];
    int n = 0;
    int i = 0;
    int len = text.length();
    while (i < len) {
      if (!firstChars.get(text.charAt(i))) {
        i++;
        continue;
      }
      String match = longestAt(text, i);
      if (match == null) {
        i++;
        continue;
      }
      i += match.length();
      if (isBoundary(match)) {
        if (n == cuts.length) {
          cuts = java.util.Arrays.copyOf(cuts, 2 * n);
        }
        cuts[n++] = i;
      }
    }
    return java.util.Arrays.copyOf(cuts, n);
  }

  /**
   * Whether {@code text} cut at {@code at} keeps its tokens ({@code encode(text)} equals {@code
   * encode(text[0, at)) ++ encode(text[at, end))}): an added token that strips nothing to its left
   * starts at {@code at}, and no added token starting in the {@link #maxAddedChars()} chars before
   * {@code at} reaches past it (conservative: such a match would be cut). Always false when the
   * tokenizer is not {@link #splittable()}.
   */
  boolean cutBefore(String text, int at) {
    if (!splittable || at <= 0 || at >= text.length() || !firstChars.get(text.charAt(at))) {
      return false;
    }
    String lead = longestAt(text, at);
    if (lead == null || !leadTokens.contains(lead)) {
      return false;
    }
    for (int s = Math.max(0, at - maxAddedChars + 1); s < at; s++) {
      if (firstChars.get(text.charAt(s))) {
        for (String t : byFirstChar.get(text.charAt(s))) {
          if (s + t.length() > at && text.startsWith(t, s)) {
            return false;
          }
        }
      }
    }
    return true;
  }

  /** The longest added token's length in chars ({@code 0} when there is none). */
  int maxAddedChars() {
    return maxAddedChars;
  }

  private String longestAt(String text, int at) {
    for (String t : byFirstChar.get(text.charAt(at))) { // longest first
      if (text.startsWith(t, at)) {
        return t;
      }
    }
    return null;
  }

  private boolean isBoundary(String token) {
    for (String b : boundaryTokens) {
      if (b.equals(token)) {
        return true;
      }
    }
    return false;
  }
}
