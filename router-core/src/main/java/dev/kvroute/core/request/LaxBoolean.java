package dev.kvroute.core.request;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * How vLLM's request models read a {@code bool} field such as {@code stream}, {@code ignore_eos} or
 * {@code stream_options.include_usage}: pydantic v2 in lax mode, applied by FastAPI to the body as
 * {@code json.loads} parsed it (pydantic's Python input, not its JSON input). Accepted: {@code
 * true}/{@code false}; the integers {@code 0} and {@code 1} and the floats {@code 0.0} and {@code 1.0}
 * (any JSON number equal to them as a double, such as {@code 1e0}); and a string that, lowercased, is
 * one of {@code 0 off f false n no} (false) or {@code 1 on t true y yes} (true), with no surrounding
 * whitespace. Refused, with pydantic-core's error type and text: any other integer that fits in 64
 * bits and any other whole float inside that range ({@code bool_parsing}), any other string ({@code
 * bool_parsing}), and anything else ({@code bool_type}): a float with a fractional part, an integer
 * or float outside the 64-bit range, an array, an object, and {@code null} (which an {@code
 * Optional[bool]} field takes as {@code None} before this rule applies: callers decide).
 *
 * <p>Source: pydantic's documentation ("Standard Library Types", Booleans, and the conversion table)
 * and pydantic-core's {@code src/input/input_python.rs} ({@code validate_bool}), checked against
 * pydantic 2.13 by {@code LaxBooleanTest}. Stateless and thread-safe.
 */
public final class LaxBoolean {
  /**
   * The boolean a JSON value stands for, or why it stands for none.
   *
   * @param value the boolean; false when {@code failure} is set
   * @param failure null when the value is a boolean
   */
  public record Result(boolean value, PydanticError failure) {
    private static final Result TRUE = new Result(true, null);
    private static final Result FALSE = new Result(false, null);
    private static final Result TYPE = new Result(false, PydanticError.BOOL_TYPE);
    private static final Result PARSING = new Result(false, PydanticError.BOOL_PARSING);

    /** Whether the value is a boolean. */
    public boolean ok() {
      return failure == null;
    }
  }

  private LaxBoolean() {}

  /** Reads {@code node} (present, possibly JSON {@code null}) as pydantic's lax {@code bool}. */
  public static Result of(JsonNode node) {
    if (node == null || node.isNull() || node.isMissingNode()) {
      return Result.TYPE;
    }
    if (node.isBoolean()) {
      return node.booleanValue() ? Result.TRUE : Result.FALSE;
    }
    if (node.isIntegralNumber()) {
      if (!node.canConvertToLong()) {
        return Result.TYPE;
      }
      long v = node.longValue();
      return v == 0 ? Result.FALSE : v == 1 ? Result.TRUE : Result.PARSING;
    }
    if (node.isNumber()) {
      double d = node.doubleValue();
      if (d == 0) {
        return Result.FALSE;
      }
      if (d == 1) {
        return Result.TRUE;
      }
      boolean whole = !Double.isInfinite(d) && !Double.isNaN(d) && d % 1.0 == 0.0;
      return whole && d > (double) Long.MIN_VALUE && d < (double) Long.MAX_VALUE ? Result.PARSING : Result.TYPE;
    }
    if (node.isTextual()) {
      return ofString(node.textValue());
    }
    return Result.TYPE;
  }

  /** A string as pydantic reads one for a {@code bool}: a fixed set of words, case-insensitive. */
  public static Result ofString(String s) {
    if (s.length() > 5) {
      return Result.PARSING;
    }
    switch (asciiLower(s)) {
      case "0":
      case "off":
      case "f":
      case "false":
      case "n":
      case "no":
        return Result.FALSE;
      case "1":
      case "on":
      case "t":
      case "true":
      case "y":
      case "yes":
        return Result.TRUE;
      default:
        return Result.PARSING;
    }
  }

  /** Lowercases ASCII letters only: a non-ASCII letter never lowers into one of the words. */
  private static String asciiLower(String s) {
    char[] c = s.toCharArray();
    for (int i = 0; i < c.length; i++) {
      if (c[i] >= 'A' && c[i] <= 'Z') {
        c[i] += 'a' - 'A';
      }
    }
    return new String(c);
  }

  /**
   * FastAPI's text for one failed body field, as vLLM puts it in its 400 (see {@link
   * LaxInteger#validationError}); {@code field} may be a dotted path ({@code
   * stream_options.include_usage}), written as pydantic's location tuple.
   */
  public static String validationError(String field, JsonNode input, PydanticError failure) {
    return LaxInteger.validationError(field, input, failure.type(), failure.message());
  }

  /**
   * The router's message for a refused value: {@code stream: "x" (expected: a boolean: true, false,
   * 0, 1 or one of pydantic's words such as "yes"; pydantic: Input should be ...)}.
   */
  public static String refusal(String field, JsonNode input, PydanticError failure) {
    return field + ": " + input + " (expected: a boolean: true, false, 0, 1, or a string such as \"yes\" or"
        + " \"off\"; pydantic: " + failure.message() + ")";
  }
}
