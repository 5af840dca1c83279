package dev.kvroute.core.admission;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;

/**
 * The two top-level request fields admission reads, taken from the body only when a request has to
 * queue (so the hot path never pays for them): vLLM's {@code priority} (an integer; lower is served
 * earlier; 0 when absent, as vLLM's default) and OpenAI's {@code user}.
 *
 * <p>Immutable and thread-safe.
 *
 * @param priority the {@code priority} field, or {@code null} when absent or not an integer
 * @param user the {@code user} field, or {@code null} when absent or not a string
 */
public record RequestFields(Integer priority, String user) {
  private static final JsonFactory JSON = new JsonFactory();
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
        if (name.equals("priority") && v == JsonToken.VALUE_NUMBER_INT && p.getNumberType() == JsonParser.NumberType.INT) {
          priority = p.getIntValue();
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
