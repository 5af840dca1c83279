package dev.kvroute.bench.workload;

import dev.kvroute.core.request.PromptSegment;
import java.util.ArrayList;
import java.util.List;

/**
 * The history of one running session as its client keeps it: each turn resends every earlier message,
 * including the assistant's actual replies, then the new user message.
 *
 * <p>Not thread-safe: one client owns a conversation at a time.
 */
public final class Conversation {
  private final Session session;
  private final List<ChatMessage> history = new ArrayList<>();
  private final List<PromptSegment> segments = new ArrayList<>();
  private int turn;

  public Conversation(Session session) {
    this.session = session;
  }

  public Session session() {
    return session;
  }

  /** Index of the turn {@link #nextRequest()} sends. */
  public int turn() {
    return turn;
  }

  /** Whether every turn has been answered. */
  public boolean done() {
    return turn >= session.turns().size();
  }

  /** The current turn's definition. */
  public Turn currentTurn() {
    return session.turns().get(turn);
  }

  /**
   * The messages of the current turn's request: the whole history plus the new user message.
   *
   * @throws IllegalStateException if the session is done
   */
  public List<ChatMessage> nextRequest() {
    if (done()) {
      throw new IllegalStateException("session " + session.key() + " has no turn left");
    }
    List<ChatMessage> messages = new ArrayList<>(history.size() + 1);
    messages.addAll(history);
    messages.add(ChatMessage.user(currentTurn().userText()));
    return messages;
  }

  /**
   * The current turn's request as the router's prompt segments (one per message, in order): what
   * {@link #nextRequest()} renders to. The segments of earlier messages are built once and reused,
   * since building one hashes its whole text.
   *
   * @throws IllegalStateException if the session is done
   */
  public List<PromptSegment> nextRequestSegments() {
    if (done()) {
      throw new IllegalStateException("session " + session.key() + " has no turn left");
    }
    while (segments.size() < history.size()) {
      ChatMessage m = history.get(segments.size());
      segments.add(PromptSegment.text(m.role(), m.content()));
    }
    List<PromptSegment> out = new ArrayList<>(segments.size() + 1);
    out.addAll(segments);
    out.add(PromptSegment.text("user", currentTurn().userText()));
    return out;
  }

  /** Records the assistant's reply to the current turn and moves to the next turn. */
  public void reply(String assistantText) {
    if (done()) {
      throw new IllegalStateException("session " + session.key() + " has no turn left");
    }
    history.add(ChatMessage.user(currentTurn().userText()));
    history.add(ChatMessage.assistant(assistantText));
    turn++;
  }
}
