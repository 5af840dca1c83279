package dev.kvroute.core.request;

/**
 * pydantic-core's error types and texts for the lax rules vLLM's request models apply to integer and
 * boolean fields ({@link LaxInteger}, {@link LaxBoolean}), as FastAPI writes them into vLLM's 400
 * ({@link LaxInteger#validationError}). Source: pydantic-core's {@code src/errors/types.rs}.
 */
public enum PydanticError {
  INT_TYPE("int_type", "Input should be a valid integer"),
  INT_PARSING("int_parsing", "Input should be a valid integer, unable to parse string as an integer"),
  INT_FROM_FLOAT("int_from_float", "Input should be a valid integer, got a number with a fractional part"),
  INT_PARSING_SIZE("int_parsing_size", "Unable to parse input string as an integer, exceeded maximum size"),
  BOOL_TYPE("bool_type", "Input should be a valid boolean"),
  BOOL_PARSING("bool_parsing", "Input should be a valid boolean, unable to interpret input");

  private final String type;
  private final String message;

  PydanticError(String type, String message) {
    this.type = type;
    this.message = message;
  }

  /** pydantic's error type, e.g. {@code int_parsing}. */
  public String type() {
    return type;
  }

  /** pydantic's error text, e.g. "Input should be a valid integer, ...". */
  public String message() {
    return message;
  }
}
