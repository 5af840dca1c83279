package dev.kvroute.core.admission;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvroute.core.request.LaxInteger;
import java.io.IOException;

/**
 * The two top-level request fields admission reads, taken from the body only when a request has to
 * queue (so the hot path never pays for them): vLLM's {@code priority} (an integer; lower is served
 * earlier; 0 when absent, as vLLM's default; read as vLLM's request model reads it, {@link LaxInteger}:
 * {@code 2}, {@code 2.0}, {@code "2"} and {@code true} are integers, saturated to the {@code int}
 * range) and OpenAI's {@code user}.
 *
 * <p>Immutable and thread-safe.
 *
 * @param priority the {@code priority} field, or {@code null} when absent or not an integer (the
 *     request parser refuses such a body with 400 before admission reads it)
 * @param user the {@code user} field, or {@code null} when absent or not a string
 */
public record RequestFields(Integer priority, String user) {
  private static final JsonFactory JSON = new ObjectMapper().getFactory();
  private static final RequestFields NONE = new RequestFields(null, null);

  /**
   * Reads {@code priority} and {@code user} from a JSON object body, skipping everything else
   * without building it (prompts are skipped token by token, not copied). A body that is not a
   * JSON object gives both {@code null}; it was already validated by the request parser.
   */
  public static RequestFields read(byte[] body, int offset, int length) {
    Integer priority = null;
    String user = null;
    try (JsonParser p = JSON.createParser(body, offset, length)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        return NONE;
      }
      JsonToken t;
      while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
        String name = p.currentName();
        JsonToken v = p.nextToken();
        if (name.equals("priority") && v != JsonToken.START_OBJECT && v != JsonToken.START_ARRAY) {
          LaxInteger.Result r = LaxInteger.of((JsonNode) p.readValueAsTree());
          priority = r.ok() ? r.intValue() : null;
        } else if (name.equals("user") && v == JsonToken.VALUE_STRING) {
          user = p.getText();
        } else {
          p.skipChildren();
        }
        if (priority != null && user != null) {
          break;
        }
      }
    } catch (IOException e) {
      return NONE;
    }
    return new RequestFields(priority, user);
  }
}
