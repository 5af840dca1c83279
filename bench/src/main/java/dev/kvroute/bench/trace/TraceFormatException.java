package dev.kvroute.bench.trace;

/**
 * A trace file that does not follow its schema: the message names the file, the 1-based line, the
 * field and what was expected, e.g. {@code trace.jsonl:17: hash_ids: 3 ids (expected: ceil(input_length
 * / 512) = 4)}.
 */
public final class TraceFormatException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  private final int line;

  TraceFormatException(String source, int line, String problem, Throwable cause) {
    super(source + ":" + line + ": " + problem, cause);
    this.line = line;
  }

  /** The 1-based line the problem is on. */
  public int line() {
    return line;
  }
}
