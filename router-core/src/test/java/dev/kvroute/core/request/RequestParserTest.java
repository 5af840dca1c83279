package dev.kvroute.core.request;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class RequestParserTest {
  private static final Function<String, String> NO_HEADERS = name -> null;
  private final RequestParser parser = RequestParser.create();

  private RequestView parse(Endpoint endpoint, String json) throws InvalidRequestException {
    return parser.parse(endpoint, json.replace('\'', '"').getBytes(StandardCharsets.UTF_8), NO_HEADERS);
  }

  private RequestView chat(String json) throws InvalidRequestException {
    return parse(Endpoint.CHAT_COMPLETIONS, json);
  }

  private static PromptSegment text(String role, String text) {
    return PromptSegment.text(role, text);
  }

  // ---- chat -----------------------------------------------------------------------------------

  @Test
  void chatWithRolesAndStringContent() throws Exception {
    RequestView v =
        chat(
            "{'model':'llama','stream':true,'max_tokens':64,'messages':["
                + "{'role':'system','content':'Be brief.'},"
                + "{'role':'user','content':'Hi'}]}");
    assertThat(v.endpoint()).isEqualTo(Endpoint.CHAT_COMPLETIONS);
    assertThat(v.model()).isEqualTo("llama");
    assertThat(v.stream()).isTrue();
    assertThat(v.maxTokens()).isEqualTo(64);
    assertThat(v.sessionKey()).isNull();
    assertThat(v.segments()).containsExactly(text("system", "Be brief."), text("user", "Hi"));
  }

  @Test
  void maxTokensAsAStringWasRefusedThoughVllmsPydanticAcceptsIt() throws Exception {
    assertThat(chat("{'max_tokens':'9','messages':[{'role':'user','content':'x'}]}").maxTokens()).isEqualTo(9);
    assertThat(chat("{'max_tokens':' 1_000 ','messages':[{'role':'user','content':'x'}]}").maxTokens())
        .isEqualTo(1000);
    assertThat(chat("{'max_completion_tokens':'12.0','messages':[{'role':'user','content':'x'}]}").maxTokens())
        .isEqualTo(12);
    assertThat(chat("{'max_tokens':true,'messages':[{'role':'user','content':'x'}]}").maxTokens()).isEqualTo(1);
  }

  @Test
  void maxCompletionTokensWinsOverMaxTokensAndDefaultsAreAbsent() throws Exception {
    assertThat(
            chat("{'max_completion_tokens':10,'max_tokens':99,'messages':[{'role':'user','content':'x'}]}")
                .maxTokens())
        .isEqualTo(10);
    RequestView v = chat("{'messages':[{'role':'user','content':'x'}]}");
    assertThat(v.maxTokens()).isEqualTo(-1);
    assertThat(v.model()).isNull();
    assertThat(v.stream()).isFalse();
    assertThat(chat("{'max_tokens':16.0,'messages':[{'role':'user','content':'x'}]}").maxTokens())
        .isEqualTo(16);
  }

  @Test
  void contentPartsJoinTextAndHashImages() throws Exception {
    RequestView a =
        chat(
            "{'messages':[{'role':'user','content':["
                + "{'type':'text','text':'What is in'},"
                + "{'type':'image_url','image_url':{'url':'https://x/cat.png','detail':'low'}},"
                + "{'type':'text','text':'this picture?'}]}]}");
    RequestView b =
        chat(
            "{'messages':[{'role':'user','content':["
                + "{'type':'text','text':'What is in'},"
                + "{'type':'image_url','image_url':{'url':'https://x/dog.png'}},"
                + "{'type':'text','text':'this picture?'}]}]}");
    String ta = a.segments().get(0).text();
    String tb = b.segments().get(0).text();
    assertThat(ta).matches("What is in\n<image_url:[0-9a-f]{32}>\nthis picture\\?");
    assertThat(ta).isNotEqualTo(tb);
    // same URL, same text; the detail does not matter
    RequestView c =
        chat(
            "{'messages':[{'role':'user','content':["
                + "{'type':'text','text':'What is in'},"
                + "{'type':'image_url','image_url':'https://x/cat.png'},"
                + "{'type':'text','text':'this picture?'}]}]}");
    assertThat(c.segments().get(0).text()).isEqualTo(ta);
  }

  @Test
  void largeDataUrlBecomesShortMarker() throws Exception {
    String data = "data:image/png;base64," + "A".repeat(500_000);
    RequestView v =
        chat(
            "{'messages':[{'role':'user','content':[{'type':'image_url','image_url':{'url':'"
                + data
                + "'}}]}]}");
    assertThat(v.segments().get(0).text()).hasSize("<image_url:>".length() + 32);
  }

  @Test
  void otherPartTypesAreHashedByContent() throws Exception {
    RequestView a =
        chat(
            "{'messages':[{'role':'user','content':[{'type':'input_audio','input_audio':{'data':'AAA','format':'wav'}}]}]}");
    RequestView b =
        chat(
            "{'messages':[{'role':'user','content':[{'type':'input_audio','input_audio':{'data':'BBB','format':'wav'}}]}]}");
    assertThat(a.segments().get(0).text()).startsWith("<input_audio:");
    assertThat(a.segments().get(0).text()).isNotEqualTo(b.segments().get(0).text());
    RequestView r =
        chat("{'messages':[{'role':'assistant','content':[{'type':'refusal','refusal':'No.'}]}]}");
    assertThat(r.segments().get(0).text()).isEqualTo("No.");
  }

  @Test
  void toolCallsToolMessagesAndNamesRender() throws Exception {
    RequestView v =
        chat(
            "{'messages':["
                + "{'role':'user','name':'alice','content':'Weather in Paris?'},"
                + "{'role':'assistant','content':null,'tool_calls':[{'id':'c1','type':'function',"
                + "'function':{'name':'get_weather','arguments':'{\\'city\\':\\'Paris\\'}'}}]},"
                + "{'role':'tool','tool_call_id':'c1','content':'18C'},"
                + "{'role':'assistant','content':'Checking.','tool_calls':[{'type':'function',"
                + "'function':{'name':'f','arguments':{'a':1}}}]}]}");
    assertThat(v.segments())
        .containsExactly(
            text("user", "alice: Weather in Paris?"),
            text(
                "assistant",
                "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\"}}</tool_call>"),
            text("tool", "18C"),
            text("assistant", "Checking.\n<tool_call>{\"name\": \"f\", \"arguments\": {\"a\":1}}</tool_call>"));
  }

  @Test
  void legacyFunctionCallRenders() throws Exception {
    RequestView v =
        chat(
            "{'messages':[{'role':'assistant','function_call':{'name':'g','arguments':'{}'}},"
                + "{'role':'function','name':'g','content':'ok'}]}");
    assertThat(v.segments())
        .containsExactly(
            text("assistant", "<tool_call>{\"name\": \"g\", \"arguments\": {}}</tool_call>"),
            text("function", "g: ok"));
  }

  // ---- session key ----------------------------------------------------------------------------

  @Test
  void sessionKeyFromHeaderThenUserField() throws Exception {
    byte[] body =
        "{\"user\":\"u-7\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"
            .getBytes(StandardCharsets.UTF_8);
    Map<String, String> headers = Map.of("x-session-id", " s-1 ");
    assertThat(parser.parse(Endpoint.CHAT_COMPLETIONS, body, headers::get).sessionKey())
        .isEqualTo("s-1");
    assertThat(parser.parse(Endpoint.CHAT_COMPLETIONS, body, NO_HEADERS).sessionKey())
        .isEqualTo("u-7");
    assertThat(
            parser.parse(Endpoint.CHAT_COMPLETIONS, body, Map.of("x-session-id", "  ")::get).sessionKey())
        .isEqualTo("u-7");
  }

  @Test
  void sessionKeyFromConfiguredHeaderAndDottedField() throws Exception {
    RequestParser custom = RequestParser.create("X-Conversation", "metadata.session_id");
    byte[] body =
        "{\"user\":\"u\",\"metadata\":{\"session_id\":42},\"prompt\":\"p\"}"
            .getBytes(StandardCharsets.UTF_8);
    assertThat(custom.parse(Endpoint.COMPLETIONS, body, NO_HEADERS).sessionKey()).isEqualTo("42");
    assertThat(
            custom
                .parse(Endpoint.COMPLETIONS, body, Map.of("x-conversation", "c9")::get)
                .sessionKey())
        .isEqualTo("c9");
    byte[] noMeta = "{\"user\":\"u\",\"prompt\":\"p\"}".getBytes(StandardCharsets.UTF_8);
    assertThat(custom.parse(Endpoint.COMPLETIONS, noMeta, NO_HEADERS).sessionKey()).isNull();
  }

  @Test
  void offsetAndLengthAreHonoured() throws Exception {
    byte[] framed = "xx{\"prompt\":\"hello\"}yy".getBytes(StandardCharsets.UTF_8);
    RequestView v = parser.parse(Endpoint.COMPLETIONS, framed, 2, framed.length - 4, NO_HEADERS);
    assertThat(v.segments()).containsExactly(text(null, "hello"));
  }

  // ---- completions ----------------------------------------------------------------------------

  @Test
  void completionPromptString() throws Exception {
    RequestView v = parse(Endpoint.COMPLETIONS, "{'model':'m','prompt':'Once upon','max_tokens':5}");
    assertThat(v.segments()).containsExactly(text(null, "Once upon"));
    assertThat(v.maxTokens()).isEqualTo(5);
  }

  @Test
  void completionPromptListOfStringsRoutesByFirst() throws Exception {
    RequestView v = parse(Endpoint.COMPLETIONS, "{'prompt':['first','second']}");
    assertThat(v.segments()).containsExactly(text(null, "first"));
  }

  @Test
  void completionPromptTokenIds() throws Exception {
    RequestView v = parse(Endpoint.COMPLETIONS, "{'prompt':[1,2,3]}");
    assertThat(v.segments()).hasSize(1);
    assertThat(v.segments().get(0).isTokens()).isTrue();
    assertThat(v.segments().get(0).tokenIds()).containsExactly(1, 2, 3);
  }

  @Test
  void completionPromptTokenIdLists() throws Exception {
    RequestView v = parse(Endpoint.COMPLETIONS, "{'prompt':[[4,5],[6]]}");
    assertThat(v.segments().get(0).tokenIds()).containsExactly(4, 5);
    // segments compare token ids by content
    assertThat(v.segments()).containsExactly(PromptSegment.tokens(new int[] {4, 5}));
    assertThat(PromptSegment.tokens(new int[] {4, 5}))
        .hasSameHashCodeAs(PromptSegment.tokens(new int[] {4, 5}))
        .isNotEqualTo(PromptSegment.tokens(new int[] {4, 6}));
  }

  // ---- SGLang /generate -----------------------------------------------------------------------

  @Test
  void generateText() throws Exception {
    RequestView v =
        parse(
            Endpoint.SGLANG_GENERATE,
            "{'text':'The capital of France is','sampling_params':{'max_new_tokens':8},'stream':true}");
    assertThat(v.segments()).containsExactly(text(null, "The capital of France is"));
    assertThat(v.maxTokens()).isEqualTo(8);
    assertThat(v.stream()).isTrue();
  }

  @Test
  void generateTextBatchAndInputIds() throws Exception {
    assertThat(parse(Endpoint.SGLANG_GENERATE, "{'text':['a','b']}").segments())
        .containsExactly(text(null, "a"));
    RequestView ids = parse(Endpoint.SGLANG_GENERATE, "{'input_ids':[9,8,7]}");
    assertThat(ids.segments().get(0).tokenIds()).containsExactly(9, 8, 7);
    assertThat(ids.maxTokens()).isEqualTo(-1);
    RequestView batch =
        parse(
            Endpoint.SGLANG_GENERATE,
            "{'input_ids':[[1],[2,3]],'sampling_params':[{'max_new_tokens':3},{'max_new_tokens':4}]}");
    assertThat(batch.segments().get(0).tokenIds()).containsExactly(1);
    assertThat(batch.maxTokens()).isEqualTo(3);
  }

  // ---- malformed ------------------------------------------------------------------------------

  @ParameterizedTest(name = "{0}: {1}")
  @CsvSource(
      delimiter = '|',
      quoteCharacter = '`',
      value = {
        // endpoint | body | expected message start | param
        "CHAT_COMPLETIONS | {'messages': [ | body: malformed JSON at line 1, column | ",
        "CHAT_COMPLETIONS | `` | body: empty (expected: a JSON object) | ",
        "CHAT_COMPLETIONS | [1,2] | body: expected a JSON object, got an array | ",
        "CHAT_COMPLETIONS | {'messages':[]} {} | body: malformed JSON | ",
        "CHAT_COMPLETIONS | {'model':'m'} | messages: missing (expected: a non-empty array of messages) | messages",
        "CHAT_COMPLETIONS | {'messages':null} | messages: missing | messages",
        "CHAT_COMPLETIONS | {'messages':'hi'} | messages: expected an array of messages, got a string | messages",
        "CHAT_COMPLETIONS | {'messages':[]} | messages: empty (expected: at least one message) | messages",
        "CHAT_COMPLETIONS | {'messages':['hi'] } | messages.0: expected a message object, got a string | messages.0",
        "CHAT_COMPLETIONS | {'messages':[{'content':'x'}]} | messages.0.role: missing | messages.0.role",
        "CHAT_COMPLETIONS | {'messages':[{'role':1,'content':'x'}]} | messages.0.role: expected a string, got a number | messages.0.role",
        "CHAT_COMPLETIONS | {'messages':[{'role':'user','content':'a'},{'role':'user','content':5}]} | messages.1.content: expected a string, null or an array of content parts, got a number | messages.1.content",
        "CHAT_COMPLETIONS | {'messages':[{'role':'user','content':[{'type':'text','text':3}]}]} | messages.0.content.0.text: expected a string, got a number | messages.0.content.0.text",
        "CHAT_COMPLETIONS | {'messages':[{'role':'user','content':[{'text':'x'}]}]} | messages.0.content.0.type: missing | messages.0.content.0.type",
        "CHAT_COMPLETIONS | {'messages':[{'role':'user','content':['x']}]} | messages.0.content.0: expected a content part object, got a string | messages.0.content.0",
        "CHAT_COMPLETIONS | {'messages':[{'role':'user','content':[{'type':'image_url'}]}]} | messages.0.content.0.image_url: missing | messages.0.content.0.image_url",
        "CHAT_COMPLETIONS | {'messages':[{'role':'user','content':[{'type':'image_url','image_url':{}}]}]} | messages.0.content.0.image_url.url: missing (expected: a string) | messages.0.content.0.image_url.url",
        "CHAT_COMPLETIONS | {'messages':[{'role':'user','name':7,'content':'x'}]} | messages.0.name: expected a string, got a number | messages.0.name",
        "CHAT_COMPLETIONS | {'messages':[{'role':'assistant','tool_calls':{}}]} | messages.0.tool_calls: expected an array of tool calls, got an object | messages.0.tool_calls",
        "CHAT_COMPLETIONS | {'messages':[{'role':'assistant','tool_calls':[{'id':'c'}]}]} | messages.0.tool_calls.0.function: missing | messages.0.tool_calls.0.function",
        "CHAT_COMPLETIONS | {'messages':[{'role':'assistant','tool_calls':[{'function':{'arguments':'{}'}}]}]} | messages.0.tool_calls.0.function.name: missing | messages.0.tool_calls.0.function.name",
        "CHAT_COMPLETIONS | {'messages':[{'role':'assistant','tool_calls':[{'function':{'name':'f','arguments':3}}]}]} | messages.0.tool_calls.0.function.arguments: expected a JSON string or an object, got a number | messages.0.tool_calls.0.function.arguments",
        "CHAT_COMPLETIONS | {'model':5,'messages':[{'role':'user','content':'x'}]} | model: expected a string, got a number | model",
        "CHAT_COMPLETIONS | {'stream':'maybe','messages':[{'role':'user','content':'x'}]} | stream: \"maybe\" (expected: a boolean | stream",
        "CHAT_COMPLETIONS | {'max_tokens':'nine','messages':[{'role':'user','content':'x'}]} | max_tokens: expected a non-negative integer, got a string | max_tokens",
        "CHAT_COMPLETIONS | {'max_tokens':'-9','messages':[{'role':'user','content':'x'}]} | max_tokens: expected a non-negative integer, got a string | max_tokens",
        "CHAT_COMPLETIONS | {'max_tokens':-1,'messages':[{'role':'user','content':'x'}]} | max_tokens: -1 (expected: a non-negative integer up to 2147483647) | max_tokens",
        "CHAT_COMPLETIONS | {'max_completion_tokens':1.5,'messages':[{'role':'user','content':'x'}]} | max_completion_tokens: 1.5 (expected: a non-negative integer up to 2147483647) | max_completion_tokens",
        "CHAT_COMPLETIONS | {'user':{'id':1},'messages':[{'role':'user','content':'x'}]} | user: expected a string, got an object | user",
        "COMPLETIONS | {'model':'m'} | prompt: missing (expected: a string, a list of strings, a list of token ids, or a list of token-id lists) | prompt",
        "COMPLETIONS | {'prompt':42} | prompt: expected a string, a list of strings | prompt",
        "COMPLETIONS | {'prompt':[]} | prompt: empty | prompt",
        "COMPLETIONS | {'prompt':['a',1]} | prompt.1: expected a string like the first prompt, got a number | prompt.1",
        "COMPLETIONS | {'prompt':[1,'a']} | prompt.1: expected a non-negative integer token id, got a string | prompt.1",
        "COMPLETIONS | {'prompt':[1,-2]} | prompt.1: expected a non-negative integer token id, got a number | prompt.1",
        "COMPLETIONS | {'prompt':[1,2.5]} | prompt.1: expected a non-negative integer token id | prompt.1",
        "COMPLETIONS | {'prompt':[1,99999999999]} | prompt.1: expected a non-negative integer token id | prompt.1",
        "COMPLETIONS | {'prompt':[[1],2]} | prompt.1: expected a list of token ids like the first prompt, got a number | prompt.1",
        "COMPLETIONS | {'prompt':[[1],['x']]} | prompt.1.0: expected a non-negative integer token id, got a string | prompt.1.0",
        "COMPLETIONS | {'prompt':[{'a':1}]} | prompt.0: expected a string, a token id or a list of token ids, got an object | prompt.0",
        "SGLANG_GENERATE | {'sampling_params':{}} | text: missing (expected: text or input_ids) | text",
        "SGLANG_GENERATE | {'text':'a','input_ids':[1]} | text: given together with input_ids | text",
        "SGLANG_GENERATE | {'text':5} | text: expected a string or a list of strings, got a number | text",
        "SGLANG_GENERATE | {'text':[1]} | text: expected a string or a list of strings, got an array | text",
        "SGLANG_GENERATE | {'input_ids':'1 2'} | input_ids: expected a list of token ids or a list of token-id lists, got a string | input_ids",
        "SGLANG_GENERATE | {'input_ids':[]} | input_ids: empty | input_ids",
        "SGLANG_GENERATE | {'text':'a','sampling_params':5} | sampling_params: expected an object, got a number | sampling_params",
        "SGLANG_GENERATE | {'text':'a','sampling_params':{'max_new_tokens':'x'}} | sampling_params.max_new_tokens: expected a non-negative integer, got a string | sampling_params.max_new_tokens",
      })
  void malformedRequestsAreRejectedWithParam(
      Endpoint endpoint, String body, String messageStart, String param) {
    assertThatThrownBy(() -> parse(endpoint, body == null ? "" : body))
        .isInstanceOf(InvalidRequestException.class)
        .hasMessageStartingWith(messageStart)
        .satisfies(e -> assertThat(((InvalidRequestException) e).param()).isEqualTo(param));
  }

  @Test
  void errorsSpeakOfTheRequestNotOfJacksonOrJavaTypes() {
    assertThatThrownBy(() -> chat("{'max_tokens':99999999999,'messages':[{'role':'user','content':'x'}]}"))
        .hasMessage("max_tokens: 99999999999 (expected: a non-negative integer up to 2147483647)");
    String deep = "{'messages':" + "[".repeat(5_000) + "]".repeat(5_000) + "}";
    assertThatThrownBy(() -> chat(deep))
        .hasMessageStartingWith("body: malformed JSON")
        .hasMessageContaining("nesting depth")
        .hasMessageNotContaining("StreamReadConstraints")
        .hasMessageNotContaining("`");
    // an unclosed array: Jackson's message names its start marker's (redacted) source
    assertThatThrownBy(() -> chat("{'model':'m','messages':[{'role':'user','content':'hi'}"))
        .hasMessageStartingWith("body: malformed JSON")
        .hasMessageContaining("line: 1, column:")
        .hasMessageNotContaining("REDACTED")
        .hasMessageNotContaining("StreamReadFeature")
        .hasMessageNotContaining("`");
  }

  @Test
  void invalidConfigurationIsRejected() {
    assertThatThrownBy(() -> RequestParser.create(" ", "user"))
        .hasMessage("sessionHeader: blank (expected: a header name)");
    assertThatThrownBy(() -> RequestParser.create("x-session-id", ""))
        .hasMessage("sessionField: blank (expected: a body field name or dotted path)");
  }

  // ---- stream (break test: "yes" refused, though vLLM's pydantic reads it as true) --------------

  /**
   * Each body in the common chat shape ({@code ChatBodyScanner}'s fast path) and in one the scanner
   * gives up on (content parts: the Jackson path), and as a completion and an SGLang generate.
   */
  private List<RequestView> everyPath(String stream) throws InvalidRequestException {
    return List.of(
        chat("{'stream':" + stream + ",'messages':[{'role':'user','content':'hi'}]}"),
        chat("{'messages':[{'role':'user','content':[{'type':'text','text':'hi'}]}],'stream':" + stream + "}"),
        parse(Endpoint.COMPLETIONS, "{'prompt':'hi','stream':" + stream + "}"),
        parse(Endpoint.SGLANG_GENERATE, "{'text':'hi','stream':" + stream + "}"));
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', quoteCharacter = '`', value = {
      "'yes' | true", "'YES' | true", "'on' | true", "'t' | true", "'1' | true", "1 | true", "1.0 | true",
      "true | true", "'no' | false", "'off' | false", "'F' | false", "'0' | false", "0 | false", "false | false",
      "null | false"})
  void streamYesWasRefusedThoughVllmReadsItAsTrue(String stream, boolean expected) throws Exception {
    for (RequestView v : everyPath(stream)) {
      assertThat(v.stream()).as("%s %s", v.endpoint(), stream).isEqualTo(expected);
    }
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', quoteCharacter = '`', value = {
      "'maybe' | unable to interpret input", "' yes' | unable to interpret input", "2 | unable to interpret input",
      "0.5 | Input should be a valid boolean)", "[] | Input should be a valid boolean)",
      "{} | Input should be a valid boolean)"})
  void streamPydanticRefusesIsStill400OnEveryPath(String stream, String pydantic) {
    String[] bodies = {
      "{'stream':" + stream + ",'messages':[{'role':'user','content':'hi'}]}",
      "{'messages':[{'role':'user','content':[{'type':'text','text':'hi'}]}],'stream':" + stream + "}"};
    for (String body : bodies) {
      assertThatThrownBy(() -> chat(body)).isInstanceOfSatisfying(InvalidRequestException.class, x -> {
        assertThat(x.param()).isEqualTo("stream");
        assertThat(x.getMessage()).startsWith("stream: ").contains("expected: a boolean").contains(pydantic);
      });
    }
  }

  // ---- priority and n (break test: ignored by the router, refused by vLLM) ----------------------

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
      "\"x\" | Input should be a valid integer, unable to parse string as an integer",
      "1e99  | Unable to parse input string as an integer, exceeded maximum size",
      "1.5   | Input should be a valid integer, got a number with a fractional part",
      "[1]   | Input should be a valid integer"})
  void badBodyPriorityWasIgnoredAndIsNow400(String priority, String pydantic) {
    for (Endpoint e : new Endpoint[] {Endpoint.CHAT_COMPLETIONS, Endpoint.COMPLETIONS}) {
      String body = e == Endpoint.COMPLETIONS ? "{'prompt':'hi','priority':" + priority + "}"
          : "{'messages':[{'role':'user','content':'hi'}],'priority':" + priority + "}";
      assertThatThrownBy(() -> parse(e, body))
          .isInstanceOfSatisfying(InvalidRequestException.class, x -> {
            assertThat(x.param()).isEqualTo("priority");
            assertThat(x.getMessage()).startsWith("priority: ").contains("expected: an integer").contains(pydantic);
          });
    }
  }

  @Test
  void priorityVllmAcceptsStillParsesAndSglangGenerateIsNotChecked() throws Exception {
    for (String p : new String[] {"-3", "2.0", "true", "'7'", "null", "99999999999999999999"}) {
      assertThat(chat("{'messages':[{'role':'user','content':'x'}],'priority':" + p + "}").segments()).hasSize(1);
    }
    assertThat(parse(Endpoint.SGLANG_GENERATE, "{'text':'x','priority':'x','n':0}").segments()).hasSize(1);
  }

  @Test
  void nWithoutUpperBoundWasForwardedAndIsNowBoundedAsVllmBoundsIt() throws Exception {
    assertThat(chat("{'messages':[{'role':'user','content':'x'}],'n':16384}").segments()).hasSize(1);
    assertThat(chat("{'messages':[{'role':'user','content':'x'}],'n':null}").segments()).hasSize(1);
    assertThatThrownBy(() -> chat("{'messages':[{'role':'user','content':'x'}],'n':100000}"))
        .isInstanceOfSatisfying(InvalidRequestException.class, x -> {
          assertThat(x.param()).isEqualTo("n");
          assertThat(x.getMessage()).isEqualTo("n must be at most 16384, got 100000. To increase this limit, set the"
              + " VLLM_MAX_N_SEQUENCES environment variable.");
        });
    assertThatThrownBy(() -> parse(Endpoint.COMPLETIONS, "{'prompt':'x','n':0}"))
        .hasMessage("n must be at least 1, got 0.");
    assertThatThrownBy(() -> parse(Endpoint.COMPLETIONS, "{'prompt':'x','n':'many'}"))
        .hasMessageStartingWith("n: \"many\" (expected: an integer from 1 to 16384");
  }
}
