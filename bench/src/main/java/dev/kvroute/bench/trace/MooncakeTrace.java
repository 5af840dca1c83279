package dev.kvroute.bench.trace;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * A Mooncake trace read from its JSON Lines file: one object per line, {@code {"timestamp": ms,
 * "input_length": tokens, "output_length": tokens, "hash_ids": [int, ...]}} (Mooncake's {@code
 * FAST25-release/traces}; see {@code ../shared/traces/SOURCES.md}). Other fields are ignored; blank
 * lines are skipped.
 *
 * <p>Validation: every line must be a JSON object with the four fields; {@code timestamp} a
 * non-negative integer not earlier than the previous line's; both lengths integers of at least 1;
 * {@code hash_ids} a list of {@code ceil(input_length / 512)} integers. A violation is a {@link
 * TraceFormatException} naming the file, the line and the field.
 *
 * <p>Immutable and thread-safe.
 */
public final class MooncakeTrace {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final String source;
  private final List<MooncakeRequest> requests;

  private MooncakeTrace(String source, List<MooncakeRequest> requests) {
    this.source = source;
    this.requests = List.copyOf(requests);
  }

  /**
   * Reads the trace file at {@code path} (UTF-8).
   *
   * @throws IOException if the file cannot be read
   * @throws TraceFormatException if a line does not follow the schema
   */
  public static MooncakeTrace read(Path path) throws IOException {
    try (BufferedReader in = Files.newBufferedReader(path, StandardCharsets.UTF_8)) {
      return parse(in, path.toString());
    }
  }

  /**
   * Reads a trace from {@code in} to its end; {@code source} names it in error messages.
   *
   * @throws IOException if {@code in} fails
   * @throws TraceFormatException if a line does not follow the schema
   */
  public static MooncakeTrace parse(BufferedReader in, String source) throws IOException {
    Objects.requireNonNull(source, "source");
    List<MooncakeRequest> out = new ArrayList<>();
    long previous = 0;
    int lineNo = 0;
    String line;
    while ((line = in.readLine()) != null) {
      lineNo++;
      if (line.isBlank()) {
        continue;
      }
      MooncakeRequest r = parseLine(line, source, lineNo);
      if (r.timestampMillis() < previous) {
        throw new TraceFormatException(source, lineNo, "timestamp: " + r.timestampMillis()
            + " (expected: >= the previous request's " + previous + ")", null);
      }
      previous = r.timestampMillis();
      out.add(r);
    }
    return new MooncakeTrace(source, out);
  }

  /** A trace of {@code requests} (in arrival order) named {@code source}; for tests and slices. */
  public static MooncakeTrace of(String source, List<MooncakeRequest> requests) {
    for (int i = 1; i < requests.size(); i++) {
      if (requests.get(i).timestampMillis() < requests.get(i - 1).timestampMillis()) {
        throw new IllegalArgumentException("requests: not in arrival order at index " + i);
      }
    }
    return new MooncakeTrace(source, requests);
  }

  private static MooncakeRequest parseLine(String line, String source, int lineNo) {
    JsonNode n;
    try {
      n = JSON.readTree(line);
    } catch (JsonProcessingException e) {
      throw new TraceFormatException(source, lineNo, "not JSON: " + e.getOriginalMessage(), e);
    }
    if (n == null || !n.isObject()) {
      throw new TraceFormatException(source, lineNo, "expected a JSON object, got " + abbreviate(line), null);
    }
    long timestamp = integer(n, "timestamp", source, lineNo);
    long input = integer(n, "input_length", source, lineNo);
    long output = integer(n, "output_length", source, lineNo);
    JsonNode ids = n.get("hash_ids");
    if (ids == null || !ids.isArray()) {
      throw new TraceFormatException(source, lineNo,
          "hash_ids: " + (ids == null ? "missing" : ids.toString()) + " (expected: a list of integers)", null);
    }
    int[] hashIds = new int[ids.size()];
    for (int i = 0; i < hashIds.length; i++) {
      JsonNode id = ids.get(i);
      if (!id.isIntegralNumber() || !id.canConvertToInt()) {
        throw new TraceFormatException(source, lineNo,
            "hash_ids[" + i + "]: " + id + " (expected: an integer)", null);
      }
      hashIds[i] = id.intValue();
    }
    if (input > Integer.MAX_VALUE || output > Integer.MAX_VALUE) {
      throw new TraceFormatException(source, lineNo, "input_length or output_length: too large", null);
    }
    try {
      return new MooncakeRequest(lineNo, timestamp, (int) input, (int) output, hashIds);
    } catch (IllegalArgumentException e) {
      throw new TraceFormatException(source, lineNo, e.getMessage(), e);
    }
  }

  private static long integer(JsonNode n, String field, String source, int lineNo) {
    JsonNode v = n.get(field);
    if (v == null || v.isNull()) {
      throw new TraceFormatException(source, lineNo, field + ": missing (expected: an integer)", null);
    }
    if (!v.isIntegralNumber() || !v.canConvertToLong()) {
      throw new TraceFormatException(source, lineNo, field + ": " + v + " (expected: an integer)", null);
    }
    return v.longValue();
  }

  private static String abbreviate(String s) {
    return s.length() <= 60 ? s : s.substring(0, 57) + "...";
  }

  /** Where the trace came from (its path), for reports and messages. */
  public String source() {
    return source;
  }

  /** The requests in arrival order. */
  public List<MooncakeRequest> requests() {
    return requests;
  }

  /** Minutes from the trace's start to its last request (0 when empty). */
  public double lastArrivalMinutes() {
    return requests.isEmpty() ? 0 : requests.get(requests.size() - 1).timestampMillis() / 60_000.0;
  }

  /**
   * The requests that arrive in {@code [fromMinutes, toMinutes)} of the trace, keeping their original
   * timestamps.
   *
   * @throws IllegalArgumentException unless {@code 0 <= fromMinutes < toMinutes}
   */
  public MooncakeTrace slice(double fromMinutes, double toMinutes) {
    if (!(fromMinutes >= 0) || !(toMinutes > fromMinutes)) {
      throw new IllegalArgumentException(
          "slice: " + fromMinutes + ".." + toMinutes + " (expected: 0 <= FROM < TO, in minutes)");
    }
    double from = fromMinutes * 60_000;
    double to = toMinutes * 60_000;
    List<MooncakeRequest> in = new ArrayList<>();
    for (MooncakeRequest r : requests) {
      if (r.timestampMillis() >= from && r.timestampMillis() < to) {
        in.add(r);
      }
    }
    return new MooncakeTrace(source, in);
  }

  /**
   * The hit rate of one infinite prefix cache that sees every request of this trace in order, starting
   * empty: a request hits the leading blocks whose ids an earlier request had (an id names its whole
   * prefix, so these are exactly its cached prefix). No router, capacity or engine rule can do better.
   */
  public IdealHitRate idealHitRate() {
    Set<Integer> seen = new HashSet<>();
    long hitBlocks = 0;
    long blocks = 0;
    long hitTokens = 0;
    long tokens = 0;
    for (MooncakeRequest r : requests) {
      int[] ids = r.hashIds();
      int k = 0;
      while (k < ids.length && seen.contains(ids[k])) {
        k++;
      }
      hitBlocks += k;
      blocks += ids.length;
      hitTokens += k == ids.length ? r.inputLength() : (long) k * MooncakeRequest.BLOCK_TOKENS;
      tokens += r.inputLength();
      for (int id : ids) {
        seen.add(id);
      }
    }
    return new IdealHitRate(hitBlocks, blocks, hitTokens, tokens);
  }

  /**
   * The hit rate of an infinite cache over a trace.
   *
   * @param hitBlocks blocks found cached
   * @param blocks blocks of all prompts
   * @param hitTokens prompt tokens in the blocks found cached (a partial last block counts its tokens)
   * @param promptTokens tokens of all prompts
   */
  public record IdealHitRate(long hitBlocks, long blocks, long hitTokens, long promptTokens) {
    /** Blocks found cached over all blocks, 0..1 (0 for an empty trace). */
    public double byBlock() {
      return blocks == 0 ? 0 : (double) hitBlocks / blocks;
    }

    /** Prompt tokens found cached over all prompt tokens, 0..1 (0 for an empty trace). */
    public double byToken() {
      return promptTokens == 0 ? 0 : (double) hitTokens / promptTokens;
    }
  }
}
