package dev.kvroute.proxy;

import dev.kvroute.proxy.config.ApiConfig;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The compiled allow-list of {@link ApiConfig}: whether a normalized path (see {@link RequestTarget})
 * may be forwarded to an engine. Matching is exact and case-sensitive, segment by segment; {@code *}
 * matches one segment, a final {@code **} one or more. A path equal to a pattern without wildcards
 * (every request to {@code /v1/chat/completions}) is one set lookup; others are split and matched.
 *
 * <p>Immutable and thread-safe.
 */
final class ApiPaths {
  private final List<String[]> patterns = new ArrayList<>();
  private final Set<String> exact;

  ApiPaths(ApiConfig config) {
    Set<String> plain = new HashSet<>();
    for (String p : config.effectivePaths()) {
      String[] segments = p.substring(1).split("/", -1);
      patterns.add(segments);
      if (!List.of(segments).contains("*") && !List.of(segments).contains("**")) {
        plain.add(p); // ApiConfig refused empty segments
      }
    }
    exact = Set.copyOf(plain);
  }

  /** Whether {@code path} (normalized, without query) matches a pattern. */
  boolean allows(String path) {
    if (path.length() < 2 || path.charAt(0) != '/') {
      return false;
    }
    if (exact.contains(path)) {
      return true;
    }
    String[] segments = path.substring(1).split("/", -1);
    for (String[] p : patterns) {
      if (matches(p, segments)) {
        return true;
      }
    }
    return false;
  }

  private static boolean matches(String[] pattern, String[] path) {
    int n = pattern.length;
    boolean tail = pattern[n - 1].equals("**");
    if (tail ? path.length < n : path.length != n) {
      return false;
    }
    for (int i = 0; i < n; i++) {
      String p = pattern[i];
      String s = path[i];
      if (tail && i == n - 1) {
        // one or more further segments, none empty except a trailing '/'
        for (int j = i; j < path.length; j++) {
          if (path[j].isEmpty() && (j == i || j < path.length - 1)) {
            return false;
          }
        }
        return true;
      }
      if (s.isEmpty() || !(p.equals("*") || p.equals(s))) {
        return false;
      }
    }
    return true;
  }
}
