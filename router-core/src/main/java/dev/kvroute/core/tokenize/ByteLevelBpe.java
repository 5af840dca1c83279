package dev.kvroute.core.tokenize;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.text.Normalizer;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * The model part of a HuggingFace byte-level BPE {@code tokenizer.json} (GPT-2 style, as Qwen2/3
 * and Llama 3 ship) in plain Java, for text that holds no added token: the {@code NFC} normalizer
 * if there is one, the {@code Split} pre-tokenizer's regex ({@code Isolated}: every match and every
 * gap between matches is a word), the {@code ByteLevel} byte-to-symbol mapping, then the {@code BPE}
 * model's merges, applied as the Rust {@code tokenizers} crate applies them ({@code
 * models/bpe/word.rs}, {@code merge_all}): repeatedly the adjacent pair whose merge comes first in
 * {@code merges}, leftmost among equals; with {@code ignore_merges} a word that is itself in the
 * vocabulary is one token. These are the library's semantics, not tiktoken's (which merges any pair
 * whose concatenation is a token, ranked by that token's id: jtokkit built from the same ranks
 * agrees on common text but is not the same algorithm, and measured only about 2x faster than the
 * native library here).
 *
 * <p>{@link #of} accepts only the shape it implements and returns null for anything else (another
 * model type, normalizer or pre-tokenizer, byte fallback, dropout, subword prefixes, a byte missing
 * from the vocabulary, a merge naming an unknown token), so that {@link HfTokenizer} keeps the
 * native library for those. {@link #encode} returns null for text whose encoding Java cannot
 * reproduce: a code point Java's Unicode tables do not know (the regex classes and NFC would then
 * differ from the Rust library's newer tables) or an unpaired surrogate.
 *
 * <p>Cost: linear in the text for the regex and the byte mapping; per word, a scan over its
 * symbols per merge (a heap for words longer than {@value #HEAP_ABOVE} bytes, so a long run of one
 * character class stays {@code O(n log n)}). Immutable and thread-safe.
 */
final class ByteLevelBpe {
  /** Words with more bytes than this merge through a heap rather than by repeated scans. */
  static final int HEAP_ABOVE = 64;

  private final Pattern split;
  private final boolean nfc;
  private final boolean ignoreMerges;
  /** The id of each byte's one-symbol token. */
  private final int[] byteIds;
  /**
   * Open addressing, key and value side by side (one cache line per probe): {@code (left << 32 |
   * right)} at {@code 2 * slot}, {@code (rank << 32 | merged id)} at {@code 2 * slot + 1}.
   */
  private final long[] pairs;
  private final int pairMask;
  /** With {@code ignore_merges}: the vocabulary by its byte-level string. */
  private final Map<String, Integer> vocab;
  /** The byte-level symbol of each byte (GPT-2's {@code bytes_to_unicode}). */
  private static final char[] BYTE_CHARS = byteChars();

  private ByteLevelBpe(Pattern split, boolean nfc, boolean ignoreMerges, int[] byteIds,
      Map<Long, Long> pairs, Map<String, Integer> vocab) {
    this.split = split;
    this.nfc = nfc;
    this.ignoreMerges = ignoreMerges;
    this.byteIds = byteIds;
    int capacity = Integer.highestOneBit(Math.max(16, pairs.size() * 2 - 1)) << 1;
    this.pairs = new long[2 * capacity];
    Arrays.fill(this.pairs, -1L);
    this.pairMask = capacity - 1;
    for (Map.Entry<Long, Long> e : pairs.entrySet()) {
      int slot = slot(e.getKey());
      while (this.pairs[2 * slot] != -1L) {
        slot = (slot + 1) & pairMask;
      }
      this.pairs[2 * slot] = e.getKey();
      this.pairs[2 * slot + 1] = e.getValue();
    }
    this.vocab = ignoreMerges ? vocab : null;
  }

  /**
   * The encoder of {@code json} (a parsed {@code tokenizer.json}), or null if its normalizer,
   * pre-tokenizer or model is not the byte-level BPE shape this class implements.
   */
  static ByteLevelBpe of(JsonNode json) {
    String normalizer = json.path("normalizer").isNull() || json.path("normalizer").isMissingNode()
        ? null : json.path("normalizer").path("type").asText("");
    if (normalizer != null && !normalizer.equals("NFC")) {
      return null;
    }
    Pattern split = splitPattern(json.path("pre_tokenizer"));
    JsonNode model = json.path("model");
    if (split == null || !model.path("type").asText("").equals("BPE")
        || model.path("byte_fallback").asBoolean(false)
        || !model.path("dropout").isNull() && !model.path("dropout").isMissingNode()
        || !model.path("continuing_subword_prefix").asText("").isEmpty()
        || !model.path("end_of_word_suffix").asText("").isEmpty()
        || !model.path("vocab").isObject()) {
      return null;
    }
    Map<String, Integer> vocab = new HashMap<>(model.path("vocab").size() * 2);
    for (Iterator<Map.Entry<String, JsonNode>> it = model.path("vocab").fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      vocab.put(e.getKey(), e.getValue().asInt());
    }
    int[] byteIds = new int[256];
    for (int b = 0; b < 256; b++) {
      Integer id = vocab.get(String.valueOf(BYTE_CHARS[b]));
      if (id == null) {
        return null;
      }
      byteIds[b] = id;
    }
    Map<Long, Long> pairs = new HashMap<>(model.path("merges").size() * 2);
    int rank = 0;
    for (JsonNode merge : model.path("merges")) {
      String left;
      String right;
      if (merge.isArray() && merge.size() == 2) {
        left = merge.get(0).asText();
        right = merge.get(1).asText();
      } else {
        String s = merge.asText("");
        int space = s.indexOf(' ', 1); // the crate splits "a b" at its space (a symbol never holds one)
        if (space < 0 || s.indexOf(' ', space + 1) >= 0) {
          return null;
        }
        left = s.substring(0, space);
        right = s.substring(space + 1);
      }
      Integer l = vocab.get(left);
      Integer r = vocab.get(right);
      Integer merged = vocab.get(left + right);
      if (l == null || r == null || merged == null) {
        return null; // the crate refuses such a file; leave it to the native library's message
      }
      pairs.putIfAbsent(((long) l << 32) | (r & 0xffffffffL), ((long) rank << 32) | (merged & 0xffffffffL));
      rank++;
    }
    return new ByteLevelBpe(split, "NFC".equals(normalizer), model.path("ignore_merges").asBoolean(false),
        byteIds, pairs, vocab);
  }

  /**
   * The regex of a {@code Sequence[Split(Regex, Isolated), ByteLevel(add_prefix_space=false,
   * use_regex=false)]} pre-tokenizer, compiled with Unicode classes ({@code \s}, {@code \p{L}} as
   * the crate's Oniguruma reads them); null for any other pre-tokenizer.
   */
  private static Pattern splitPattern(JsonNode pre) {
    if (!pre.path("type").asText("").equals("Sequence") || pre.path("pretokenizers").size() != 2) {
      return null;
    }
    JsonNode s = pre.path("pretokenizers").get(0);
    JsonNode b = pre.path("pretokenizers").get(1);
    if (!s.path("type").asText("").equals("Split") || !s.path("behavior").asText("").equals("Isolated")
        || s.path("invert").asBoolean(false) || !s.path("pattern").path("Regex").isTextual()
        || !b.path("type").asText("").equals("ByteLevel") || b.path("add_prefix_space").asBoolean(false)
        || b.path("use_regex").asBoolean(true)) {
      return null;
    }
    try {
      return Pattern.compile(s.path("pattern").path("Regex").asText(), Pattern.UNICODE_CHARACTER_CLASS);
    } catch (PatternSyntaxException e) {
      return null;
    }
  }

  /**
   * The ids of {@code text} (which must hold no added token: {@link HfTokenizer} splits those off),
   * or null if Java's Unicode tables cannot be trusted to reproduce the library on it.
   */
  int[] encode(String text) {
    if (!javaKnowsEveryCodePoint(text)) {
      return null;
    }
    String normalized = nfc && !Normalizer.isNormalized(text, Normalizer.Form.NFC)
        ? Normalizer.normalize(text, Normalizer.Form.NFC) : text;
    Ids out = new Ids(Math.max(16, normalized.length() / 3));
    Matcher m = split.matcher(normalized);
    int at = 0;
    while (m.find()) {
      if (m.start() > at) {
        word(normalized, at, m.start(), out); // a gap is a word of its own (Isolated)
      }
      if (m.end() > m.start()) {
        word(normalized, m.start(), m.end(), out);
      }
      at = m.end();
    }
    if (at < normalized.length()) {
      word(normalized, at, normalized.length(), out);
    }
    return out.toArray();
  }

  private void word(String text, int start, int end, Ids out) {
    byte[] bytes = text.substring(start, end).getBytes(StandardCharsets.UTF_8);
    if (bytes.length == 1) {
      out.add(byteIds[bytes[0] & 0xff]);
      return;
    }
    if (ignoreMerges) {
      char[] symbols = new char[bytes.length];
      for (int i = 0; i < bytes.length; i++) {
        symbols[i] = BYTE_CHARS[bytes[i] & 0xff];
      }
      Integer whole = vocab.get(new String(symbols));
      if (whole != null) {
        out.add(whole);
        return;
      }
    }
    int[] ids = new int[bytes.length];
    for (int i = 0; i < bytes.length; i++) {
      ids[i] = byteIds[bytes[i] & 0xff];
    }
    if (bytes.length > HEAP_ABOVE) {
      mergeWithHeap(ids, out);
    } else {
      mergeByScan(ids, out);
    }
  }

  /**
   * Merges in place over a shrinking array: the first-ranked pair, leftmost among equals. {@code
   * merges[i]} is the merge of {@code ids[i]} and {@code ids[i + 1]} ({@code Long.MAX_VALUE} for
   * none); a merge changes only its neighbours' entries.
   */
  private void mergeByScan(int[] ids, Ids out) {
    int n = ids.length;
    long[] merges = new long[n];
    for (int i = 0; i + 1 < n; i++) {
      merges[i] = orNone(pair(ids[i], ids[i + 1]));
    }
    while (n > 1) {
      long best = Long.MAX_VALUE;
      int at = -1;
      for (int i = 0; i + 1 < n; i++) {
        if (merges[i] < best) { // the rank is the high half: smaller value, earlier merge
          best = merges[i];
          at = i;
        }
      }
      if (at < 0) {
        break;
      }
      ids[at] = (int) best;
      System.arraycopy(ids, at + 2, ids, at + 1, n - at - 2);
      System.arraycopy(merges, at + 2, merges, at + 1, n - at - 2);
      n--;
      merges[at] = at + 1 < n ? orNone(pair(ids[at], ids[at + 1])) : Long.MAX_VALUE;
      if (at > 0) {
        merges[at - 1] = orNone(pair(ids[at - 1], ids[at]));
      }
    }
    for (int i = 0; i < n; i++) {
      out.add(ids[i]);
    }
  }

  /**
   * The same merges through a priority queue ordered by (rank, position), as the crate does: an
   * entry whose symbols have changed since it was queued no longer names the same merge at that
   * position and is skipped.
   */
  private void mergeWithHeap(int[] ids, Ids out) {
    int n = ids.length;
    int[] next = new int[n];
    int[] prev = new int[n];
    boolean[] gone = new boolean[n];
    PriorityQueue<long[]> queue = new PriorityQueue<>((a, b) ->
        a[0] != b[0] ? Long.compare(a[0], b[0]) : Long.compare(a[1], b[1]));
    for (int i = 0; i < n; i++) {
      next[i] = i + 1 < n ? i + 1 : -1;
      prev[i] = i - 1;
      if (i + 1 < n) {
        long v = pair(ids[i], ids[i + 1]);
        if (v != -1L) {
          queue.add(new long[] {v >>> 32, i});
        }
      }
    }
    while (!queue.isEmpty()) {
      long[] top = queue.poll();
      int i = (int) top[1];
      if (gone[i] || next[i] < 0) {
        continue;
      }
      int j = next[i];
      long v = pair(ids[i], ids[j]);
      if (v == -1L || (v >>> 32) != top[0]) {
        continue;
      }
      ids[i] = (int) v;
      gone[j] = true;
      next[i] = next[j];
      if (next[j] >= 0) {
        prev[next[j]] = i;
      }
      if (prev[i] >= 0) {
        long l = pair(ids[prev[i]], ids[i]);
        if (l != -1L) {
          queue.add(new long[] {l >>> 32, prev[i]});
        }
      }
      if (next[i] >= 0) {
        long r = pair(ids[i], ids[next[i]]);
        if (r != -1L) {
          queue.add(new long[] {r >>> 32, i});
        }
      }
    }
    for (int i = 0; i >= 0; i = next[i]) {
      out.add(ids[i]);
    }
  }

  /** {@code rank << 32 | merged id} of the merge of {@code left} and {@code right}, or {@code -1}. */
  private long pair(int left, int right) {
    long key = ((long) left << 32) | (right & 0xffffffffL);
    for (int slot = slot(key); ; slot = (slot + 1) & pairMask) {
      long k = pairs[2 * slot];
      if (k == key) {
        return pairs[2 * slot + 1];
      }
      if (k == -1L) {
        return -1L;
      }
    }
  }

  private static long orNone(long merge) {
    return merge == -1L ? Long.MAX_VALUE : merge;
  }

  private int slot(long key) {
    long h = key * 0x9E3779B97F4A7C15L;
    return (int) (h >>> 40) & pairMask;
  }

  /** No unpaired surrogate and no code point unassigned in Java's Unicode tables. */
  static boolean javaKnowsEveryCodePoint(String text) {
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c < 0x80) {
        continue;
      }
      if (Character.isHighSurrogate(c)) {
        if (i + 1 >= text.length() || !Character.isLowSurrogate(text.charAt(i + 1))) {
          return false;
        }
        if (!Character.isDefined(Character.toCodePoint(c, text.charAt(i + 1)))) {
          return false;
        }
        i++;
      } else if (Character.isLowSurrogate(c) || !Character.isDefined(c)) {
        return false;
      }
    }
    return true;
  }

  /** GPT-2's {@code bytes_to_unicode}: printable bytes map to themselves, the rest to 256 on. */
  private static char[] byteChars() {
    char[] out = new char[256];
    int extra = 0;
    for (int b = 0; b < 256; b++) {
      boolean printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      out[b] = printable ? (char) b : (char) (256 + extra++);
    }
    return out;
  }

  /** A growable int array. */
  private static final class Ids {
    private int[] a;
    private int n;

    Ids(int capacity) {
      a = new int[capacity];
    }

    void add(int v) {
      if (n == a.length) {
        a = Arrays.copyOf(a, 2 * n);
      }
      a[n++] = v;
    }

    int[] toArray() {
      return Arrays.copyOf(a, n);
    }
  }
}
