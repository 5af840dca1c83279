package dev.kvroute.bench.load;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.kvroute.bench.workload.FleetSpec;
import dev.kvroute.bench.workload.Session;
import dev.kvroute.bench.workload.Turn;
import dev.kvroute.bench.workload.Workload;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class LoadDriverTest {
  private static Workload workload(int sessions, int turns) {
    List<Session> list = new ArrayList<>();
    for (int s = 0; s < sessions; s++) {
      List<Turn> t = new ArrayList<>();
      for (int i = 0; i < turns; i++) {
        t.add(new Turn(" doc" + s + "-" + i, 1, 3 + i, 0.01));
      }
      list.add(new Session(s, "session-" + s, 0.001 * s, s, t));
    }
    return new Workload("test", list, new FleetSpec(1, 160, 16, 1000, 0, 10), 10);
  }

  @Test
  void eachTurnResendsTheHistoryWithTheStreamedReplyAndTheSessionHeader() throws Exception {
    try (FakeChatServer server = new FakeChatServer(5)) {
      LoadResult r = LoadDriver.run(workload(1, 3), LoadSettings.of(server.uri(), 1, null), LoadProgress.none());

      assertThat(r.errors()).isZero();
      assertThat(r.figures().requests()).isEqualTo(3);
      assertThat(server.requests).hasSize(3);
      JsonNode third = server.requests.get(2);
      assertThat(third.get("model").asText()).isEqualTo("fake-model");
      assertThat(third.get("messages")).hasSize(5);
      assertThat(third.get("messages").get(1).get("role").asText()).isEqualTo("assistant");
      assertThat(third.get("messages").get(1).get("content").asText()).isEqualTo(" t0 t1 t2");
      assertThat(third.get("messages").get(3).get("content").asText()).isEqualTo(" t0 t1 t2 t3");
      assertThat(third.get("max_tokens").asInt()).isEqualTo(5);
      assertThat(server.sessionHeaders).containsOnly("session-0");
      assertThat(r.requestsPerBackend()).containsEntry("fake-0", 3L);
      assertThat(r.figures().hitRate()).isBetween(0.45, 0.5);
    }
  }

  @Test
  void ttftIsClientMeasuredTimesTheTimeScale() throws Exception {
    try (FakeChatServer server = new FakeChatServer(40)) {
      LoadResult r = LoadDriver.run(workload(4, 2), LoadSettings.of(server.uri(), 10, "m"), LoadProgress.none());
      assertThat(r.figures().requests()).isEqualTo(8);
      // 40 ms wall x 10 = at least 0.4 model seconds
      assertThat(r.figures().meanTtftSeconds()).isGreaterThanOrEqualTo(0.4);
    }
  }

  @Test
  void aFailedRequestEndsItsSessionAndIsReported() throws Exception {
    try (FakeChatServer server = new FakeChatServer(1)) {
      server.failStatus = 503;
      LoadResult r = LoadDriver.run(workload(2, 3), LoadSettings.of(server.uri(), 1, "m"), LoadProgress.none());
      assertThat(r.errors()).isEqualTo(2);
      assertThat(r.figures().requests()).isZero();
      assertThat(r.errorSamples()).first().asString().contains("HTTP 503", "nope");
    }
  }

  @Test
  void manyConcurrentStreams() throws Exception {
    try (FakeChatServer server = new FakeChatServer(20)) {
      LoadResult r = LoadDriver.run(workload(128, 2), LoadSettings.of(server.uri(), 1, "m"), LoadProgress.none());
      assertThat(r.errors()).isZero();
      assertThat(r.figures().requests()).isEqualTo(256);
    }
  }

  @Test
  void requestsAreSplitRoundRobinAcrossRouterReplicasSoASessionVisitsEach() throws Exception {
    try (FakeChatServer first = new FakeChatServer(1); FakeChatServer second = new FakeChatServer(1)) {
      // one session of four turns: its turns alternate between the two replicas
      LoadSettings settings = LoadSettings.of(first.uri(), 1, "m").withTargets(List.of(first.uri(), second.uri()));
      assertThat(settings.targets()).containsExactly(first.uri(), second.uri());
      LoadResult r = LoadDriver.run(workload(1, 4), settings, LoadProgress.none());
      assertThat(r.errors()).isZero();
      assertThat(r.figures().requests()).isEqualTo(4);
      assertThat(first.requests).hasSize(2);
      assertThat(second.requests).hasSize(2);
      assertThat(first.requests.get(0).get("messages")).hasSize(1); // turns 1 and 3 here
      assertThat(second.requests.get(0).get("messages")).hasSize(3); // turns 2 and 4 there
      assertThat(second.requests.get(1).get("messages")).hasSize(7);
      assertThat(first.sessionHeaders).containsOnly("session-0");
      assertThat(second.sessionHeaders).containsOnly("session-0");
    }
  }
}
