package dev.kvroute.core.request;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.Iterator;
import java.util.Map;

/**
 * How vLLM's request models read an {@code int} field such as {@code priority} or {@code n}: pydantic
 * v2 in lax mode (FastAPI validates the parsed JSON body against the request model). Accepted: a
 * JSON integer of any size, {@code true}/{@code false} (1/0), a float with no fractional part inside
 * the 64-bit range, and a string holding an integer (surrounding whitespace, {@code _} between
 * digits and trailing {@code .0} allowed). Refused, with pydantic-core's error type and text: a float
 * with a fractional part ({@code int_from_float}), an integral float outside the 64-bit range such as
 * {@code 1e99} ({@code int_parsing_size}), a string that is not an integer ({@code int_parsing}), and
 * anything else, {@code null} included ({@code int_type}).
 *
 * <p>Source: pydantic-core's {@code src/input/shared.rs} ({@code float_as_int}, {@code str_as_int})
 * and {@code src/errors/types.rs} (the messages). Stateless and thread-safe.
 */
public final class LaxInteger {
  private static final BigInteger LONG_MIN = BigInteger.valueOf(Long.MIN_VALUE);
  private static final BigInteger LONG_MAX = BigInteger.valueOf(Long.MAX_VALUE);

  /**
   * The integer a JSON value stands for, or why it stands for none.
   *
   * @param value the integer, saturated to the {@code long} range (pydantic keeps big integers
   *     exact; every use here only orders or bounds them); 0 when {@code failure} is set
   * @param failure null when the value is an integer
   */
  public record Result(long value, PydanticError failure) {
    /** Whether the value is an integer. */
    public boolean ok() {
      return failure == null;
    }

    /** The value saturated to the {@code int} range. */
    public int intValue() {
      return (int) Math.max(Integer.MIN_VALUE, Math.min(Integer.MAX_VALUE, value));
    }
  }

  private LaxInteger() {}

  /** Reads {@code node} (present, possibly JSON {@code null}) as pydantic's lax {@code int}. */
  public static Result of(JsonNode node) {
    if (node == null || node.isNull() || node.isMissingNode()) {
      return new Result(0, PydanticError.INT_TYPE);
    }
    if (node.isBoolean()) {
      return new Result(node.booleanValue() ? 1 : 0, null);
    }
    if (node.isIntegralNumber()) {
      return new Result(saturate(node.bigIntegerValue()), null);
    }
    if (node.isNumber()) {
      return ofFloat(node.doubleValue());
    }
    if (node.isTextual()) {
      return ofString(node.textValue());
    }
    return new Result(0, PydanticError.INT_TYPE);
  }

  private static Result ofFloat(double d) {
    if (Double.isNaN(d) || Double.isInfinite(d)) {
      return new Result(0, PydanticError.INT_PARSING_SIZE); // JSON has neither; a literal too large reads as infinite
    }
    if (d % 1.0 != 0.0) {
      return new Result(0, PydanticError.INT_FROM_FLOAT);
    }
    if (d > (double) Long.MIN_VALUE && d < (double) Long.MAX_VALUE) {
      return new Result((long) d, null);
    }
    return new Result(0, PydanticError.INT_PARSING_SIZE);
  }

  private static Result ofString(String s) {
    String t = s.strip();
    int dot = t.indexOf('.');
    if (dot >= 0 && dot + 1 <= t.length() && t.substring(dot + 1).chars().allMatch(c -> c == '0')) {
      t = t.substring(0, dot); // pydantic strips ".0+" before parsing
    }
    if (t.contains("_")) {
      if (t.startsWith("_") || t.endsWith("_") || t.contains("__")) {
        return new Result(0, PydanticError.INT_PARSING);
      }
      t = t.replace("_", "");
    }
    if (t.isEmpty() || !t.matches("[+-]?[0-9]+")) {
      return new Result(0, PydanticError.INT_PARSING);
    }
    return new Result(saturate(new BigInteger(t.startsWith("+") ? t.substring(1) : t)), null);
  }

  private static long saturate(BigInteger b) {
    return b.compareTo(LONG_MAX) > 0 ? Long.MAX_VALUE : b.compareTo(LONG_MIN) < 0 ? Long.MIN_VALUE : b.longValue();
  }

  /**
   * FastAPI's text for one failed body field, as vLLM puts it in its 400 ({@code str()} of the
   * {@code RequestValidationError}): {@code "1 validation error:\n  {'type': 'int_parsing', 'loc':
   * ('body', 'priority'), 'msg': '...', 'input': 'x'}\n"}, the input written as Python writes it.
   */
  public static String validationError(String field, JsonNode input, PydanticError failure) {
    return validationError(field, input, failure.type(), failure.message());
  }

  /** As above for any pydantic error; a dotted {@code field} is a nested location ({@code ('body', 'a', 'b')}). */
  public static String validationError(String field, JsonNode input, String type, String message) {
    StringBuilder sb = new StringBuilder("1 validation error:\n  {'type': '").append(type).append("', 'loc': ('body'");
    for (String part : field.split("\\.")) {
      sb.append(", '").append(part).append('\'');
    }
    sb.append("), 'msg': '").append(message).append("', 'input': ");
    python(sb, input);
    return sb.append("}\n").toString();
  }

  /** Appends a JSON value as Python's {@code repr} of what {@code json.loads} makes of it. */
  static void python(StringBuilder sb, JsonNode v) {
    if (v == null || v.isNull() || v.isMissingNode()) {
      sb.append("None");
    } else if (v.isBoolean()) {
      sb.append(v.booleanValue() ? "True" : "False");
    } else if (v.isIntegralNumber()) {
      sb.append(v.bigIntegerValue());
    } else if (v.isNumber()) {
      sb.append(pythonFloat(v.doubleValue()));
    } else if (v.isTextual()) {
      pythonString(sb, v.textValue());
    } else if (v.isArray()) {
      sb.append('[');
      for (int i = 0; i < v.size(); i++) {
        python(sb.append(i == 0 ? "" : ", "), v.get(i));
      }
      sb.append(']');
    } else {
      sb.append('{');
      Iterator<Map.Entry<String, JsonNode>> it = v.fields();
      boolean first = true;
      while (it.hasNext()) {
        Map.Entry<String, JsonNode> e = it.next();
        pythonString(sb.append(first ? "" : ", "), e.getKey());
        python(sb.append(": "), e.getValue());
        first = false;
      }
      sb.append('}');
    }
  }

  /** Python's {@code repr(float)}: shortest digits, scientific below 1e-4 and from 1e16 ({@code 1e+99}). */
  static String pythonFloat(double d) {
    if (Double.isNaN(d)) {
      return "nan";
    }
    if (Double.isInfinite(d)) {
      return d > 0 ? "inf" : "-inf";
    }
    if (d == 0) {
      return (1 / d < 0) ? "-0.0" : "0.0";
    }
    BigDecimal b = new BigDecimal(Double.toString(d)).stripTrailingZeros();
    int exponent = b.precision() - b.scale() - 1; // the decimal exponent of the first digit
    if (exponent >= -4 && exponent < 16) {
      String plain = b.toPlainString();
      return plain.contains(".") ? plain : plain + ".0";
    }
    String digits = b.unscaledValue().abs().toString();
    String mantissa = digits.length() == 1 ? digits : digits.charAt(0) + "." + digits.substring(1);
    return (d < 0 ? "-" : "") + mantissa + "e" + (exponent < 0 ? "-" : "+")
        + (Math.abs(exponent) < 10 ? "0" : "") + Math.abs(exponent);
  }

  /** Python's {@code repr(str)}: single quotes unless the text holds one and no double quote. */
  static void pythonString(StringBuilder sb, String s) {
    char q = s.indexOf('\'') >= 0 && s.indexOf('"') < 0 ? '"' : '\'';
    sb.append(q);
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == q || c == '\\') {
        sb.append('\\').append(c);
      } else if (c == '\n') {
        sb.append("\\n");
      } else if (c == '\r') {
        sb.append("\\r");
      } else if (c == '\t') {
        sb.append("\\t");
      } else if (c < 0x20 || c == 0x7f) {
        sb.append(String.format("\\x%02x", (int) c));
      } else {
        sb.append(c);
      }
    }
    sb.append(q);
  }
}
