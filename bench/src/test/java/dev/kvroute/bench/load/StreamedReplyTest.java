package dev.kvroute.bench.load;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class StreamedReplyTest {
  static final String ROLE = "{\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}";
  static final String USAGE =
      "{\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":2,"
          + "\"prompt_tokens_details\":{\"cached_tokens\":4}}}";

  static String token(String text) {
    return "{\"choices\":[{\"delta\":{\"content\":\"" + text + "\"}}]}";
  }

  /** What the outcome was told. */
  static final class Told implements StreamedReply.Outcome {
    final List<String> calls = new ArrayList<>();
    ChatStreamReader reader;

    @Override
    public void completed(ChatStreamReader r, long sentNanos, String backend) {
      reader = r;
      calls.add("completed sent " + sentNanos + " on " + backend);
    }

    @Override
    public void failed(String problem) {
      calls.add("failed: " + problem);
    }
  }

  static Told replay(boolean wholeText, String backend, String... events) {
    Told told = new Told();
    StreamedReply reply = new StreamedReply(new ChatStreamReader(), 7, wholeText, told);
    DefaultHttpHeaders headers = new DefaultHttpHeaders();
    if (backend != null) {
      headers.set("x-kvroute-backend", backend);
    }
    reply.onHeaders(200, headers);
    for (String e : events) {
      ByteBuf chunk = Unpooled.copiedBuffer("data: " + e + "\n\n", StandardCharsets.UTF_8);
      try {
        reply.onBody(chunk);
      } finally {
        chunk.release();
      }
    }
    reply.onEnd();
    return told;
  }

  @Test
  void aCompleteStreamCompletesWithItsBackendAndWholeText() {
    Told told = replay(true, "engine-1", ROLE, token(" a"), token(" b"), USAGE, "[DONE]");
    assertThat(told.calls).containsExactly("completed sent 7 on engine-1");
    assertThat(told.reader.text()).isEqualTo(" a b");
    assertThat(told.reader.promptTokens()).isEqualTo(10);
    assertThat(told.reader.cachedTokens()).isEqualTo(4);
  }

  @Test
  void withoutWholeTextOnlyTheFirstTokenIsParsedButUsageStillIs() {
    Told told = replay(false, null, ROLE, token(" a"), token(" b"), USAGE, "[DONE]");
    assertThat(told.calls).containsExactly("completed sent 7 on null");
    assertThat(told.reader.text()).isEqualTo(" a");
    assertThat(told.reader.promptTokens()).isEqualTo(10);
  }

  @Test
  void anIncompleteStreamFailsWithWhatItLacks() {
    assertThat(replay(true, null, ROLE, token(" a"), USAGE).calls)
        .containsExactly("failed: stream ended without [DONE]");
    assertThat(replay(true, null, ROLE, USAGE, "[DONE]").calls).containsExactly("failed: no content");
    assertThat(replay(true, null, ROLE, token(" a"), "[DONE]").calls)
        .containsExactly("failed: no usage chunk (stream_options.include_usage ignored?)");
    assertThat(replay(false, null, token(" a"), "{\"error\":{\"message\":\"boom\"}}", "[DONE]").calls)
        .containsExactly("failed: error event: boom");
    assertThat(replay(true, null, "not json", token(" a"), USAGE, "[DONE]").calls)
        .singleElement().asString().startsWith("failed: unreadable event: ");
  }

  @Test
  void anExchangeErrorFailsWithItsMessage() {
    Told told = new Told();
    new StreamedReply(new ChatStreamReader(), 0, true, told).onError(new java.io.IOException("HTTP 503: nope"));
    assertThat(told.calls).containsExactly("failed: HTTP 503: nope");
  }
}
