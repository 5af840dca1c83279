package dev.kvroute.core.request;

import java.util.function.Function;

/**
 * Reads the routing view of a generation request body without changing it: the model, the session
 * key, the prompt as ordered {@link PromptSegment segments}, whether it streams, and the requested
 * output length.
 *
 * <p>Shapes understood:
 *
 * <ul>
 *   <li>{@link Endpoint#CHAT_COMPLETIONS}: {@code messages}, a non-empty array of objects with a
 *       string {@code role}; {@code content} a string, {@code null}, or an array of parts
 *       ({@code text} and {@code refusal} parts contribute their text; {@code image_url},
 *       {@code video_url}, {@code audio_url}, {@code input_audio}, {@code file} and unknown parts
 *       contribute a marker with a 128-bit hash of their data, so different images differ while
 *       a large data URL costs a few tokens); parts joined with {@code "\n"}; {@code name} renders
 *       as a {@code "name: "} prefix; assistant {@code tool_calls} (and legacy
 *       {@code function_call}) render as {@code <tool_call>{"name": ..., "arguments": ...}</tool_call>}
 *       lines after the content. One segment per message, its role as given.
 *   <li>{@link Endpoint#COMPLETIONS}: {@code prompt} as a string, a list of strings, a list of
 *       token ids, or a list of token-id lists. A batch routes by its first prompt, so the view holds
 *       only the first.
 *   <li>{@link Endpoint#SGLANG_GENERATE}: {@code text} (string or list of strings) or
 *       {@code input_ids} (token ids or lists of them), not both; first prompt of a batch.
 * </ul>
 *
 * <p>Other fields: {@code model} (string), {@code stream} (boolean), the output length from
 * {@code max_completion_tokens}, else {@code max_tokens}, else SGLang's
 * {@code sampling_params.max_new_tokens} (a non-negative integer). The session key is the
 * configured header's value when present and non-blank, else the configured body field (default
 * {@code user}; a dotted path such as {@code metadata.session_id} reaches into objects; a string or
 * an integer).
 *
 * <p>Thread-safe and stateless.
 */
public interface RequestParser {
  /** Default header carrying the session key. */
  String DEFAULT_SESSION_HEADER = "x-session-id";

  /** Default body field carrying the session key when the header is absent. */
  String DEFAULT_SESSION_FIELD = "user";

  /**
   * Parses {@code body} as a request to {@code endpoint}. The view's text segments may refer to
   * {@code body}'s bytes and decode them later (see {@link PromptSegment}): keep the bytes unchanged
   * while the view is in use.
   *
   * @param header looks up a request header by (lowercase) name, returning {@code null} if absent
   * @throws InvalidRequestException when the body is not a JSON object, a field has the wrong type,
   *     or there is no prompt; its message names the field as a dotted path and says what was
   *     expected
   */
  default RequestView parse(Endpoint endpoint, byte[] body, Function<String, String> header)
      throws InvalidRequestException {
    return parse(endpoint, body, 0, body.length, header);
  }

  /**
   * As {@link #parse(Endpoint, byte[], Function)} for {@code length} bytes of {@code body} from
   * {@code offset} (e.g. a heap buffer's backing array, without copying).
   *
   * @throws InvalidRequestException as {@link #parse(Endpoint, byte[], Function)}
   */
  RequestView parse(
      Endpoint endpoint, byte[] body, int offset, int length, Function<String, String> header)
      throws InvalidRequestException;

  /** A parser with the default session header and body field. */
  static RequestParser create() {
    return create(DEFAULT_SESSION_HEADER, DEFAULT_SESSION_FIELD);
  }

  /**
   * A parser taking the session key from {@code sessionHeader} (case-insensitive name), else from
   * the body field {@code sessionField} (dotted path).
   *
   * @throws IllegalArgumentException if either is blank
   */
  static RequestParser create(String sessionHeader, String sessionField) {
    return new JsonRequestParser(sessionHeader, sessionField);
  }

  /**
   * As {@link #create(String, String)}; with {@code hashWhileParsing} false, a chat message's text
   * is not hashed as the body is read but when its {@link PromptSegment#textHash} is first asked
   * for. The results are the same either way. Hashing while reading is the cheaper of the two
   * when the hash is then asked for (the check and the hash share one pass), and not hashing
   * saves the hash (about half of reading a chat body) for a policy that reads no prompt.
   *
   * @throws IllegalArgumentException if either name is blank
   */
  static RequestParser create(String sessionHeader, String sessionField, boolean hashWhileParsing) {
    return new JsonRequestParser(sessionHeader, sessionField, hashWhileParsing);
  }
}
