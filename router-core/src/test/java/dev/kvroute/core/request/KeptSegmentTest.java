package dev.kvroute.core.request;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** {@link KeptSegment} in both forms: what it matches after its request's buffer holds other bytes. */
final class KeptSegmentTest {
  /** A segment for the JSON string {@code json} (content, no quotes) placed at {@code at} in a buffer. */
  private static TextSegment inBody(String role, String json, int at) {
    byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
    byte[] body = new byte[at + bytes.length + 3];
    Arrays.fill(body, (byte) 'x');
    System.arraycopy(bytes, 0, body, at, bytes.length);
    return TextSegment.ofJson(role, body, at, at + bytes.length, json.indexOf('\\') >= 0, -1, null);
  }

  @ParameterizedTest
  @EnumSource(KeptSegment.Form.class)
  void aBodySegmentIsRecognizedAfterItsBufferIsReused(KeptSegment.Form form) {
    String text = "tell me \\\"more\\\" about it, ".repeat(80);
    byte[] body = ("{\"x\":\"" + text + "\"}").getBytes(StandardCharsets.UTF_8);
    TextSegment first = TextSegment.ofJson("user", body, 6, body.length - 2, true, -1, null);
    KeptSegment kept = KeptSegment.of(first, form);
    Arrays.fill(body, (byte) ' '); // the request's buffer, reused for other bytes
    TextSegment later = inBody("user", text, 101);
    assertThat(kept.matches(later)).isTrue();
    assertThat(kept.role()).isEqualTo("user");
  }

  @ParameterizedTest
  @EnumSource(KeptSegment.Form.class)
  void anotherByteRoleLengthOrEscapingIsNoMatch(KeptSegment.Form form) {
    String text = "a".repeat(100);
    KeptSegment kept = KeptSegment.of(inBody("user", text, 0), form);
    String other = "a".repeat(20) + "b" + "a".repeat(79); // same length, same fingerprinted bytes
    assertThat(kept.matches(inBody("user", other, 0))).isFalse();
    assertThat(kept.matches(inBody("assistant", text, 0))).isFalse();
    assertThat(kept.matches(inBody("user", text + "a", 0))).isFalse();
    assertThat(kept.matches(PromptSegment.text("user", text))).as("the same text held as a string").isFalse();
    // the same text escaped differently is another JSON string
    KeptSegment escaped = KeptSegment.of(inBody("user", "caf\\u00e9", 0), form);
    assertThat(escaped.matches(inBody("user", "caf\u00e9", 0))).isFalse();
    assertThat(escaped.matches(inBody("user", "caf\\u00e9", 5))).isTrue();
  }

  @ParameterizedTest
  @EnumSource(KeptSegment.Form.class)
  void segmentsHoldingTheirTextOrIdsAreKeptAsTheyAre(KeptSegment.Form form) {
    KeptSegment text = KeptSegment.of(PromptSegment.text("system", "be brief"), form);
    assertThat(text.matches(PromptSegment.text("system", "be brief"))).isTrue();
    assertThat(text.matches(PromptSegment.text("system", "be brie"))).isFalse();
    assertThat(text.heldBytes()).isEqualTo(16);
    KeptSegment ids = KeptSegment.of(PromptSegment.tokens(new int[] {1, 2, 3}), form);
    assertThat(ids.matches(PromptSegment.tokens(new int[] {1, 2, 3}))).isTrue();
    assertThat(ids.matches(PromptSegment.tokens(new int[] {1, 2}))).isFalse();
  }

  @Test
  void aDigestHoldsAFewBytesWhereACopyHoldsTheText() {
    TextSegment s = inBody("user", "z".repeat(5000), 0);
    assertThat(KeptSegment.of(s, KeptSegment.Form.COPY).heldBytes()).isEqualTo(5000);
    assertThat(KeptSegment.of(s, KeptSegment.Form.DIGEST).heldBytes()).isLessThan(64);
  }
}
