package dev.kvroute.bench.workload;

import java.util.List;
import java.util.Objects;

/**
 * One multi-turn chat session: turn {@code i} sends the whole history so far (every earlier user
 * message and the assistant's actual reply to it) plus {@code turns().get(i).userText()}; the next turn
 * starts its think time when the reply has completed.
 *
 * <p>Immutable and thread-safe.
 *
 * @param index position in the workload, from 0
 * @param key the session key sent with every request ({@code x-session-id} header and {@code user})
 * @param startSeconds model time of the first request
 * @param seed seed for the engine's generated text of this session's requests ({@code seed} field)
 * @param turns the turns, at least one
 */
public record Session(int index, String key, double startSeconds, long seed, List<Turn> turns) {
  public Session {
    Objects.requireNonNull(key, "key");
    turns = List.copyOf(turns);
    if (turns.isEmpty()) {
      throw new IllegalArgumentException("turns: empty (expected: at least one turn)");
    }
  }

  /** The {@code seed} sent with turn {@code turn}, distinct per request of the workload. */
  public long requestSeed(int turn) {
    return seed * 1_000 + turn;
  }
}
