package dev.kvroute.engine.server;

/** Minimal JSON text helpers for the hot path (chunks are built with a StringBuilder). Stateless. */
final class Json {
  private Json() {}

  /** Appends {@code s} as a JSON string literal (quoted, escaped), or {@code null}. */
  static StringBuilder quote(StringBuilder sb, String s) {
    if (s == null) {
      return sb.append("null");
    }
    sb.append('"');
    for (int i = 0, n = s.length(); i < n; i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\n' -> sb.append("\\n");
        case '\r' -> sb.append("\\r");
        case '\t' -> sb.append("\\t");
        default -> {
          if (c < 0x20) {
            sb.append(String.format("\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
        }
      }
    }
    return sb.append('"');
  }

  static String quote(String s) {
    return quote(new StringBuilder(), s).toString();
  }
}
