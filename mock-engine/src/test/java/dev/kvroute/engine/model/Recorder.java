package dev.kvroute.engine.model;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Records listener events for assertions. */
final class Recorder implements EngineListener {
  record First(long nowNanos, int cachedTokens, long prefillNanos, long queueNanos) {}

  final Map<Long, First> first = new HashMap<>();
  final Map<Long, List<Long>> tokenTimes = new HashMap<>();
  final Map<Long, List<Integer>> tokenIds = new HashMap<>();
  final Map<Long, String> reason = new HashMap<>();
  final Map<Long, Long> finishedAt = new HashMap<>();
  final List<String> log = new ArrayList<>();

  @Override
  public void onFirstToken(long id, long now, int cachedTokens, long prefillNanos, long queueNanos) {
    if (first.put(id, new First(now, cachedTokens, prefillNanos, queueNanos)) != null) {
      throw new AssertionError("second first token for " + id);
    }
    log.add("first " + id + " @" + now);
  }

  @Override
  public void onToken(long id, long now, int index, int tokenId) {
    List<Long> times = tokenTimes.computeIfAbsent(id, k -> new ArrayList<>());
    if (index != times.size()) {
      throw new AssertionError("token index " + index + " after " + times.size() + " tokens of " + id);
    }
    times.add(now);
    tokenIds.computeIfAbsent(id, k -> new ArrayList<>()).add(tokenId);
  }

  @Override
  public void onFinished(long id, long now, String why) {
    if (reason.put(id, why) != null) {
      throw new AssertionError("finished twice: " + id);
    }
    finishedAt.put(id, now);
    log.add("finished " + id + " " + why + " @" + now);
  }
}
