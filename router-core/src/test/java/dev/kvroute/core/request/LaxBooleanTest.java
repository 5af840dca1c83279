package dev.kvroute.core.request;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvroute.core.request.PydanticError;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** pydantic's lax {@code bool} as vLLM's request models apply it to {@code stream}, {@code ignore_eos}... */
final class LaxBooleanTest {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  private static LaxBoolean.Result of(String json) throws Exception {
    return LaxBoolean.of(MAPPER.readTree(json));
  }

  /** pydantic's documented table (Standard Library Types, Booleans; the conversion table). */
  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
    "true | true", "false | false", "1 | true", "0 | false", "1.0 | true", "0.0 | false", "1e0 | true",
    "-0.0 | false", "'\"yes\"' | true", "'\"YES\"' | true", "'\"y\"' | true", "'\"on\"' | true",
    "'\"oN\"' | true", "'\"t\"' | true", "'\"True\"' | true", "'\"1\"' | true", "'\"no\"' | false",
    "'\"N\"' | false", "'\"off\"' | false", "'\"f\"' | false", "'\"FALSE\"' | false", "'\"0\"' | false",
    "'\"ye\\u0073\"' | true"})
  void acceptsWhatPydanticLaxModeTakesForABool(String json, boolean value) throws Exception {
    assertThat(of(json).ok()).as(json).isTrue();
    assertThat(of(json).value()).as(json).isEqualTo(value);
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
    "2 | BOOL_PARSING", "-1 | BOOL_PARSING", "2.0 | BOOL_PARSING", "9223372036854775807 | BOOL_PARSING",
    "9223372036854775808 | BOOL_TYPE", "0.5 | BOOL_TYPE", "1.0000000000000002 | BOOL_TYPE", "1e300 | BOOL_TYPE",
    "'\"maybe\"' | BOOL_PARSING", "'\" yes\"' | BOOL_PARSING", "'\"yes \"' | BOOL_PARSING", "'\"\"' | BOOL_PARSING",
    "'\"00\"' | BOOL_PARSING", "'\"1.0\"' | BOOL_PARSING", "'\"\\u00fd\"' | BOOL_PARSING", "'\"１\"' | BOOL_PARSING",
    "null | BOOL_TYPE", "[] | BOOL_TYPE", "'{}' | BOOL_TYPE", "'[true]' | BOOL_TYPE"})
  void refusesWithPydanticsErrorTypes(String json, PydanticError failure) throws Exception {
    assertThat(of(json).failure()).as(json).isEqualTo(failure);
  }

  @Test
  void validationErrorReadsAsFastApisTextWithANestedLocation() throws Exception {
    JsonNode maybe = MAPPER.readTree("\"maybe\"");
    assertThat(LaxBoolean.validationError("stream_options.include_usage", maybe, PydanticError.BOOL_PARSING)).isEqualTo(
        "1 validation error:\n  {'type': 'bool_parsing', 'loc': ('body', 'stream_options', 'include_usage'),"
            + " 'msg': 'Input should be a valid boolean, unable to interpret input', 'input': 'maybe'}\n");
    assertThat(LaxBoolean.validationError("ignore_eos", MAPPER.readTree("null"), PydanticError.BOOL_TYPE))
        .contains("'loc': ('body', 'ignore_eos')").endsWith("'input': None}\n");
  }

  /**
   * Every value here, and 3,000 random ones near the rule's edges, against pydantic itself (python3 with
   * pydantic, {@code .ci/requirements.txt}): skipped without it locally, failed without it on CI.
   */
  @Test
  void agreesWithPydanticOnGeneratedValues() throws Exception {
    List<String> values = new ArrayList<>(List.of("true", "false", "null", "0", "1", "2", "-1", "0.0", "1.0", "-0.0",
        "1e0", "1e-400", "0.9999999999999999999", "2.0", "0.5", "1e300", "9223372036854775807",
        "9223372036854775808", "-9223372036854775808", "-9223372036854775809", "1000000000000000000",
        "[]", "{}", "[1]", "{\"a\":true}"));
    String[] words = {"0", "off", "f", "false", "n", "no", "1", "on", "t", "true", "y", "yes", "maybe", "", "2",
        "tru", "yess", "nope", "1.0", "00", "ı", "ＹＥＳ", "\u0130", "\u212a"};
    Random r = new Random(42);
    for (int i = 0; i < 3_000; i++) {
      switch (r.nextInt(5)) {
        case 0 -> values.add(MAPPER.writeValueAsString(mutate(words[r.nextInt(words.length)], r)));
        case 1 -> values.add(Long.toString(r.nextInt(5) - 2L + (r.nextBoolean() ? 0 : Long.MAX_VALUE - r.nextInt(3))));
        case 2 -> values.add(Double.toString((r.nextInt(7) - 3) / (double) (1 + r.nextInt(3))));
        case 3 -> values.add(r.nextInt(3) + "e" + (r.nextInt(40) - 20));
        default -> values.add("\"" + words[r.nextInt(words.length)].toUpperCase() + "\"");
      }
    }
    List<String> pydantic = pydantic(values);
    for (int i = 0; i < values.size(); i++) {
      JsonNode v = MAPPER.readTree(values.get(i));
      LaxBoolean.Result got = LaxBoolean.of(v);
      String mine = got.ok() ? Boolean.toString(got.value()) : got.failure().type();
      assertThat(mine).as("%s (pydantic: %s)", values.get(i), pydantic.get(i)).isEqualTo(pydantic.get(i).split(" ")[0]);
    }
  }

  private static String mutate(String word, Random r) {
    StringBuilder sb = new StringBuilder();
    for (char c : word.toCharArray()) {
      sb.append(r.nextInt(3) == 0 ? Character.toUpperCase(c) : c);
    }
    return switch (r.nextInt(6)) {
      case 0 -> " " + sb;
      case 1 -> sb + "\t";
      default -> sb.toString();
    };
  }

  /** pydantic's answer per value (src/test/python/pydantic_bool_reference.py). */
  static List<String> pydantic(List<String> values) throws IOException, InterruptedException {
    Process check = new ProcessBuilder("python3", "-c", "import pydantic").redirectErrorStream(true).start();
    check.getInputStream().readAllBytes();
    boolean present = check.waitFor(120, TimeUnit.SECONDS) && check.exitValue() == 0;
    if (!present) {
      if ("true".equalsIgnoreCase(System.getenv("CI"))) {
        fail("python3 with pydantic is not installed (.ci/setup-python.sh installs .ci/requirements.txt)");
      }
      assumeTrue(false, "python3 with pydantic is not installed: pip install -r .ci/requirements.txt");
    }
    Path script = Path.of("src", "test", "python", "pydantic_bool_reference.py").toAbsolutePath();
    Process p = new ProcessBuilder("python3", script.toString()).redirectErrorStream(true).start();
    try (OutputStream in = p.getOutputStream()) {
      in.write((String.join("\n", values) + "\n").getBytes(StandardCharsets.UTF_8));
    }
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(2, TimeUnit.MINUTES) || p.exitValue() != 0) {
      fail("pydantic_bool_reference.py failed:\n" + out);
    }
    List<String> lines = out.lines().toList();
    assertThat(lines).hasSize(values.size());
    return lines;
  }
}
