package dev.kvroute.bench.workload;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.SingleTokenVocabulary;
import dev.kvroute.core.tokenize.Tokenizer;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class ChatRequestsTest {
  private final PromptTokenizer tokenizer = PromptTokenizer.create(Tokenizer.defaultTokenizer());
  private final SingleTokenVocabulary words = SingleTokenVocabulary.of(Tokenizer.defaultTokenizer());

  @Test
  void bodyIsAStreamingChatRequestWithUsageAndAFixedReplyLength() throws Exception {
    byte[] body = ChatRequests.body("m", "session-0001", List.of(ChatMessage.user(" hi \"there\"")), 7, 99);
    JsonNode n = new ObjectMapper().readTree(body);
    assertThat(n.get("model").asText()).isEqualTo("m");
    assertThat(n.get("messages").get(0).get("role").asText()).isEqualTo("user");
    assertThat(n.get("messages").get(0).get("content").asText()).isEqualTo(" hi \"there\"");
    assertThat(n.get("max_tokens").asInt()).isEqualTo(7);
    assertThat(n.get("ignore_eos").asBoolean()).isTrue();
    assertThat(n.get("stream").asBoolean()).isTrue();
    assertThat(n.get("stream_options").get("include_usage").asBoolean()).isTrue();
    assertThat(n.get("user").asText()).isEqualTo("session-0001");
    assertThat(n.get("seed").asLong()).isEqualTo(99);
  }

  @Test
  void nWordsAreNTokensSoEveryTurnExtendsThePreviousPromptWithTheReply() {
    SplittableRandom random = new SplittableRandom(1);
    String doc = words.randomText(1_000, random);
    String reply = words.randomText(50, random);
    List<ChatMessage> first = List.of(ChatMessage.user(doc));
    List<ChatMessage> second =
        List.of(ChatMessage.user(doc), ChatMessage.assistant(reply), ChatMessage.user(words.randomText(30, random)));

    int[] p1 = tokenizer.tokenize(ChatRequests.view("m", "s", first, 50));
    int[] p2 = tokenizer.tokenize(ChatRequests.view("m", "s", second, 10));
    int[] replyIds = tokenizer.encode(reply);
    assertThat(replyIds).hasSize(50);
    // prompt 1 + the engine's generated ids is a prefix of prompt 2
    assertThat(java.util.Arrays.copyOf(p2, p1.length + 50))
        .isEqualTo(concat(p1, replyIds));
    assertThat(ChatRequests.counter(tokenizer).promptTokens(first)).isEqualTo(p1.length);
  }

  private static int[] concat(int[] a, int[] b) {
    int[] out = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }
}
