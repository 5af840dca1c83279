package dev.kvroute.bench.workload;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvroute.core.request.PromptSegment;
import java.util.List;
import org.junit.jupiter.api.Test;

class ConversationTest {
  private final Session session =
      new Session(0, "s", 0, 1, List.of(new Turn(" doc", 1, 2, 1), new Turn(" more", 1, 3, 0)));

  @Test
  void eachTurnResendsTheWholeHistoryWithTheActualReplies() {
    Conversation c = new Conversation(session);
    assertThat(c.nextRequest()).containsExactly(ChatMessage.user(" doc"));
    assertThat(c.nextRequestSegments()).containsExactly(PromptSegment.text("user", " doc"));
    c.reply(" a b");
    assertThat(c.nextRequestSegments())
        .containsExactly(
            PromptSegment.text("user", " doc"), PromptSegment.text("assistant", " a b"),
            PromptSegment.text("user", " more"));
    assertThat(c.nextRequest())
        .containsExactly(ChatMessage.user(" doc"), ChatMessage.assistant(" a b"), ChatMessage.user(" more"));
    assertThat(c.currentTurn().replyTokens()).isEqualTo(3);
    c.reply(" c d e");
    assertThat(c.done()).isTrue();
    assertThatThrownBy(c::nextRequest).isInstanceOf(IllegalStateException.class);
  }
}
