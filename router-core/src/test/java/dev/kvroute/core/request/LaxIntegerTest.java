package dev.kvroute.core.request;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvroute.core.request.PydanticError;
import org.junit.jupiter.api.Test;

/** pydantic's lax {@code int} as vLLM's request models apply it to {@code priority} and {@code n}. */
final class LaxIntegerTest {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  private static LaxInteger.Result of(String json) throws Exception {
    return LaxInteger.of(MAPPER.readTree(json));
  }

  @Test
  void acceptsWhatPydanticLaxModeTakesForAnInt() throws Exception {
    assertThat(of("7").value()).isEqualTo(7);
    assertThat(of("-7").value()).isEqualTo(-7);
    assertThat(of("7.0").value()).isEqualTo(7);
    assertThat(of("1e3").value()).isEqualTo(1000);
    assertThat(of("true").value()).isEqualTo(1);
    assertThat(of("false").value()).isEqualTo(0);
    assertThat(of("\" 12 \"").value()).isEqualTo(12);
    assertThat(of("\"+12\"").value()).isEqualTo(12);
    assertThat(of("\"1_000\"").value()).isEqualTo(1000);
    assertThat(of("\"5.00\"").value()).isEqualTo(5);
    assertThat(of("123456789012345678901234567890").value()).isEqualTo(Long.MAX_VALUE);
    assertThat(of("123456789012345678901234567890").intValue()).isEqualTo(Integer.MAX_VALUE);
  }

  @Test
  void refusesTheBreakTestsPrioritiesWithPydanticsErrorTypes() throws Exception {
    assertThat(of("\"x\"").failure()).isEqualTo(PydanticError.INT_PARSING);
    assertThat(of("\"\"").failure()).isEqualTo(PydanticError.INT_PARSING);
    assertThat(of("\"1.5\"").failure()).isEqualTo(PydanticError.INT_PARSING);
    assertThat(of("\"1e9\"").failure()).isEqualTo(PydanticError.INT_PARSING);
    assertThat(of("1.5").failure()).isEqualTo(PydanticError.INT_FROM_FLOAT);
    assertThat(of("1e99").failure()).isEqualTo(PydanticError.INT_PARSING_SIZE);
    assertThat(of("-1e19").failure()).isEqualTo(PydanticError.INT_PARSING_SIZE);
    assertThat(of("null").failure()).isEqualTo(PydanticError.INT_TYPE);
    assertThat(of("[1]").failure()).isEqualTo(PydanticError.INT_TYPE);
    assertThat(of("{}").failure()).isEqualTo(PydanticError.INT_TYPE);
  }

  @Test
  void validationErrorReadsAsFastApisTextWithThePythonInput() throws Exception {
    JsonNode x = MAPPER.readTree("\"x\"");
    assertThat(LaxInteger.validationError("priority", x, PydanticError.INT_PARSING)).isEqualTo(
        "1 validation error:\n  {'type': 'int_parsing', 'loc': ('body', 'priority'), 'msg': 'Input should be a valid"
            + " integer, unable to parse string as an integer', 'input': 'x'}\n");
    assertThat(LaxInteger.validationError("priority", MAPPER.readTree("1e99"), PydanticError.INT_PARSING_SIZE))
        .endsWith("'input': 1e+99}\n");
    assertThat(LaxInteger.validationError("priority", MAPPER.readTree("null"), PydanticError.INT_TYPE))
        .endsWith("'input': None}\n");
    assertThat(LaxInteger.validationError("priority", MAPPER.readTree("[1,\"a'b\",{\"k\":false}]"), PydanticError.INT_TYPE))
        .endsWith("'input': [1, \"a'b\", {'k': False}]}\n");
  }

  @Test
  void pythonFloatRepr() {
    assertThat(LaxInteger.pythonFloat(1.5)).isEqualTo("1.5");
    assertThat(LaxInteger.pythonFloat(1e99)).isEqualTo("1e+99");
    assertThat(LaxInteger.pythonFloat(1e16)).isEqualTo("1e+16");
    assertThat(LaxInteger.pythonFloat(1234567.0)).isEqualTo("1234567.0");
    assertThat(LaxInteger.pythonFloat(0.0001)).isEqualTo("0.0001");
    assertThat(LaxInteger.pythonFloat(0.00001)).isEqualTo("1e-05");
    assertThat(LaxInteger.pythonFloat(-2.5e-7)).isEqualTo("-2.5e-07");
  }

  @Test
  void jsonContentTypeAsFastApiReadsIt() {
    assertThat(JsonContentType.readsAsJson(null)).isTrue();
    assertThat(JsonContentType.readsAsJson("application/json")).isTrue();
    assertThat(JsonContentType.readsAsJson("Application/JSON; charset=utf-8")).isTrue();
    assertThat(JsonContentType.readsAsJson("application/vnd.api+json")).isTrue();
    assertThat(JsonContentType.readsAsJson("text/plain")).isFalse();
    assertThat(JsonContentType.readsAsJson("application/x-www-form-urlencoded")).isFalse();
    assertThat(JsonContentType.readsAsJson("text/json")).isFalse();
    assertThat(JsonContentType.readsAsJson("json")).isFalse();
    assertThat(JsonContentType.readsAsJson("")).isTrue();
    assertThat(JsonContentType.readsAsJson(" ")).isFalse();
  }
}
