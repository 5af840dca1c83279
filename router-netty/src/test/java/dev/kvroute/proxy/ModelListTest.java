package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

final class ModelListTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  private static ControlClient.Response answer(int status, String body) {
    return new ControlClient.Response(status, "application/json", body.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void mergesTheDataListsInBackendOrderFirstOccurrenceWinning() throws Exception {
    ModelList m = ModelList.merge(Arrays.asList(
        answer(200, "{\"object\":\"list\",\"data\":[{\"id\":\"a\",\"owned_by\":\"first\"},{\"id\":\"b\"}]}"),
        answer(200, "{\"object\":\"list\",\"data\":[{\"id\":\"a\",\"owned_by\":\"second\"},{\"id\":\"c\"}]}")));
    assertThat(m.anyAnswered()).isTrue();
    JsonNode j = JSON.readTree(m.json());
    assertThat(j.path("object").asText()).isEqualTo("list");
    assertThat(j.path("data").findValuesAsText("id")).containsExactly("a", "b", "c");
    assertThat(j.path("data").get(0).path("owned_by").asText()).isEqualTo("first");
  }

  @Test
  void failedErroredAndGarbageAnswersContributeNothing() throws Exception {
    ModelList m = ModelList.merge(Arrays.asList(
        null,
        answer(503, "{\"data\":[{\"id\":\"down\"}]}"),
        answer(200, "not json {"),
        answer(200, "{\"data\":[{\"id\":\"up\"}]}")));
    assertThat(m.anyAnswered()).isTrue();
    assertThat(JSON.readTree(m.json()).path("data").findValuesAsText("id")).containsExactly("up");
  }

  @Test
  void noAnswerMeansNoneAnswered() throws Exception {
    ModelList m = ModelList.merge(Arrays.asList(null, answer(500, "{}"), answer(200, "<html>")));
    assertThat(m.anyAnswered()).isFalse();
    assertThat(JSON.readTree(m.json()).path("data")).isEmpty();
  }
}
