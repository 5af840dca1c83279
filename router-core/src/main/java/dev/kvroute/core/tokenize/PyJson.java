package dev.kvroute.core.tokenize;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.List;
import java.util.Map;

/**
 * Python's {@code json.dumps(value, ensure_ascii=False, indent=indent, separators=None,
 * sort_keys=False)} for plain Java values, which is what transformers' {@code tojson} filter gives a
 * chat template: {@code ", "} and {@code ": "} separators without indent ({@code ","} and a
 * newline plus indent with one), non-ASCII characters as they are, control characters escaped,
 * floats as Python's {@code repr} ({@code 1.0}, {@code 1e-05}, {@code 1e+20}), maps in their
 * iteration order.
 *
 * <p>Stateless and thread-safe.
 */
final class PyJson {
  private PyJson() {}

  /** {@code value} as Python's {@code json.dumps} writes it; {@code indent < 0} means none. */
  static String dumps(Object value, int indent) {
    StringBuilder out = new StringBuilder();
    write(out, value, indent, 0);
    return out.toString();
  }

  private static void write(StringBuilder out, Object v, int indent, int depth) {
    if (v == null) {
      out.append("null");
    } else if (v instanceof CharSequence s) {
      string(out, s.toString());
    } else if (v instanceof Boolean b) {
      out.append(b ? "true" : "false");
    } else if (v instanceof Double || v instanceof Float) {
      out.append(pyFloat(((Number) v).doubleValue()));
    } else if (v instanceof BigDecimal d) {
      out.append(pyFloat(d.doubleValue()));
    } else if (v instanceof Number n) {
      out.append(n instanceof BigInteger ? n.toString() : Long.toString(n.longValue()));
    } else if (v instanceof Map<?, ?> m) {
      if (m.isEmpty()) {
        out.append("{}");
        return;
      }
      out.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> e : m.entrySet()) {
        separator(out, first, indent, depth + 1);
        first = false;
        Object key = e.getKey();
        string(out, key instanceof String s ? s : String.valueOf(key));
        out.append(": ");
        write(out, e.getValue(), indent, depth + 1);
      }
      close(out, indent, depth);
      out.append('}');
    } else if (v instanceof Iterable<?> list) {
      if (list instanceof List<?> l && l.isEmpty()) {
        out.append("[]");
        return;
      }
      out.append('[');
      boolean first = true;
      for (Object item : list) {
        separator(out, first, indent, depth + 1);
        first = false;
        write(out, item, indent, depth + 1);
      }
      if (first) {
        out.append(']');
        return;
      }
      close(out, indent, depth);
      out.append(']');
    } else if (v instanceof Object[] array) {
      write(out, List.of(array), indent, depth);
    } else {
      string(out, v.toString());
    }
  }

  private static void separator(StringBuilder out, boolean first, int indent, int depth) {
    if (indent < 0) {
      if (!first) {
        out.append(", ");
      }
      return;
    }
    if (!first) {
      out.append(',');
    }
    out.append('\n');
    out.append(" ".repeat(indent * depth));
  }

  private static void close(StringBuilder out, int indent, int depth) {
    if (indent >= 0) {
      out.append('\n');
      out.append(" ".repeat(indent * depth));
    }
  }

  private static void string(StringBuilder out, String s) {
    out.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        case '\b' -> out.append("\\b");
        case '\f' -> out.append("\\f");
        default -> {
          if (c < 0x20) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    out.append('"');
  }

  /** Python's {@code repr} of a float, as {@code json.dumps} writes it. */
  static String pyFloat(double d) {
    if (Double.isNaN(d)) {
      return "NaN";
    }
    if (Double.isInfinite(d)) {
      return d > 0 ? "Infinity" : "-Infinity";
    }
    if (d == 0) {
      return (1 / d < 0) ? "-0.0" : "0.0";
    }
    BigDecimal shortest = new BigDecimal(Double.toString(Math.abs(d))).stripTrailingZeros();
    String digits = shortest.unscaledValue().toString();
    int exp10 = digits.length() - 1 - shortest.scale(); // d = 0.digits... x 10^(exp10 + 1)
    StringBuilder out = new StringBuilder(d < 0 ? "-" : "");
    if (exp10 < -4 || exp10 >= 16) {
      out.append(digits.charAt(0));
      if (digits.length() > 1) {
        out.append('.').append(digits, 1, digits.length());
      }
      out.append('e').append(exp10 < 0 ? '-' : '+');
      int e = Math.abs(exp10);
      out.append(e < 10 ? "0" + e : Integer.toString(e));
    } else if (exp10 < 0) {
      out.append("0.").append("0".repeat(-exp10 - 1)).append(digits);
    } else if (digits.length() <= exp10 + 1) {
      out.append(digits).append("0".repeat(exp10 + 1 - digits.length())).append(".0");
    } else {
      out.append(digits, 0, exp10 + 1).append('.').append(digits, exp10 + 1, digits.length());
    }
    return out.toString();
  }
}
