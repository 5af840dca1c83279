package dev.kvroute.engine.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.StreamResponse;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.ChatCompletionStreamOptions;
import com.openai.models.completions.Completion;
import com.openai.models.completions.CompletionCreateParams;
import com.openai.models.completions.CompletionUsage;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The official OpenAI Java SDK talks to the mock engine as to vLLM: chat, streaming, usage. */
class OpenAiSdkIT {
  static MockEngineServer server;
  static OpenAIClient client;

  @BeforeAll
  static void start() {
    server = MockEngineServer.start(MockEngineOptions.builder()
        .engine(MockEngineServerIT.engine().build()).timeScale(100).enablePromptTokensDetails(true).build());
    client = OpenAIOkHttpClient.builder().baseUrl(server.url() + "/v1").apiKey("not-needed")
        .maxRetries(0).timeout(Duration.ofSeconds(20)).build();
  }

  @AfterAll
  static void stop() {
    client.close();
    server.close();
  }

  static ChatCompletionCreateParams.Builder params(String question) {
    return ChatCompletionCreateParams.builder()
        .model(MockEngineOptions.DEFAULT_MODEL)
        .addSystemMessage("You are a terse assistant. " + question)
        .addUserMessage(question)
        .maxCompletionTokens(12);
  }

  @Test
  void chatCompletion() {
    ChatCompletion c = client.chat().completions().create(params("What is a KV cache?").build());
    assertThat(c.id()).startsWith("chatcmpl-");
    assertThat(c.choices()).hasSize(1);
    assertThat(c.choices().get(0).message().content()).hasValueSatisfying(t -> assertThat(t).isNotBlank());
    CompletionUsage u = c.usage().orElseThrow();
    assertThat(u.completionTokens()).isBetween(1L, 12L);
    assertThat(u.totalTokens()).isEqualTo(u.promptTokens() + u.completionTokens());
    assertThat(u.promptTokensDetails().orElseThrow().cachedTokens()).hasValue(0L);

    ChatCompletion again = client.chat().completions().create(params("What is a KV cache?").build());
    assertThat(again.choices().get(0).message().content()).isEqualTo(c.choices().get(0).message().content());
    assertThat(again.usage().orElseThrow().promptTokensDetails().orElseThrow().cachedTokens().orElseThrow())
        .isEqualTo((u.promptTokens() - 1) / 16 * 16);
  }

  @Test
  void streamingChatWithUsage() {
    ChatCompletionCreateParams p = params("Stream me something.")
        .streamOptions(ChatCompletionStreamOptions.builder().includeUsage(true).build()).build();
    List<ChatCompletionChunk> chunks = new ArrayList<>();
    try (StreamResponse<ChatCompletionChunk> s = client.chat().completions().createStreaming(p)) {
      s.stream().forEach(chunks::add);
    }
    StringBuilder text = new StringBuilder();
    String finish = null;
    for (ChatCompletionChunk ch : chunks) {
      for (ChatCompletionChunk.Choice choice : ch.choices()) {
        choice.delta().content().ifPresent(text::append);
        if (choice.finishReason().isPresent()) {
          finish = choice.finishReason().get().asString();
        }
      }
    }
    ChatCompletionChunk last = chunks.get(chunks.size() - 1);
    assertThat(last.choices()).isEmpty();
    CompletionUsage u = last.usage().orElseThrow();
    assertThat(finish).isIn("stop", "length");
    assertThat(text.toString()).isNotBlank();
    assertThat(chunks.get(0).choices().get(0).delta().role()).isPresent();
    assertThat(chunks.size()).isEqualTo(u.completionTokens() + 2);
  }

  @Test
  void legacyCompletion() {
    Completion c = client.completions().create(CompletionCreateParams.builder()
        .model(MockEngineOptions.DEFAULT_MODEL).prompt("The quick brown fox").maxTokens(5).build());
    assertThat(c.choices().get(0).text()).isNotEmpty();
    assertThat(c.usage().orElseThrow().completionTokens()).isBetween(1L, 5L);
  }
}
