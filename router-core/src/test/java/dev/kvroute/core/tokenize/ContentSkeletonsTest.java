package dev.kvroute.core.tokenize;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.core.request.TextHash;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * {@link ContentSkeletons}: every rendering it answers equals the template's own, for contents
 * drawn to hit what templates look at (searched literals, strippable ends, compared literals), and
 * templates that depend on a content in ways a marker cannot show (its case, its length) are never
 * substituted.
 */
class ContentSkeletonsTest {
  private static final TextHash CONTEXT = new TextHash(1, 2);
  /** Looks inside contents as Qwen3 does: a search, a split, strips, a comparison. */
  private static final String INSPECTING = "{% for m in messages %}"
      + "{% if '</x>' in m.content %}[{{ m.content.split('</x>')[-1].lstrip('\\n') }}]"
      + "{% elif m.content == 'stop' %}STOP"
      + "{% else %}<{{ m.role }}>{{ m.content | trim }}|{{ m.content.rstrip('.') }}</{{ m.role }}>{% endif %}"
      + "{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}";
  private static final String[] PIECES = {"hello", "world", " ", "\n", ".", "</x>", "stop", "\t", "中文",
      "🙂", "a.b", "  ", "x"};

  @Test
  void substitutedRenderingsEqualTheTemplates() {
    ChatTemplate template = ChatTemplate.of(INSPECTING, Map.of(), InstantSource.system());
    ContentSkeletons skeletons = new ContentSkeletons(template, 1 << 20);
    SplittableRandom random = new SplittableRandom(3);
    for (int i = 0; i < 2_000; i++) {
      ChatInput input = conversation(random, 1 + random.nextInt(4));
      assertThat(skeletons.render(input, CONTEXT)).as("%s", input.messages()).isEqualTo(template.render(input));
    }
    assertThat(skeletons.substituted()).as("renderings answered by substitution").isGreaterThan(100);
  }

  @Test
  void aTemplateThatChangesContentsIsRendered() {
    ChatTemplate template = ChatTemplate.of("{% for m in messages %}{{ m.content | upper }};{% endfor %}",
        Map.of(), InstantSource.system());
    ContentSkeletons skeletons = new ContentSkeletons(template, 1 << 20);
    for (String c : List.of("abc", "def", "ghi")) {
      ChatInput input = new ChatInput(List.of(message("user", c)), null, null, true, false, Map.of());
      assertThat(skeletons.render(input, CONTEXT)).isEqualTo(c.toUpperCase() + ";");
    }
    assertThat(skeletons.substituted()).isZero();
  }

  @Test
  void aTemplateThatBranchesOnLengthIsRendered() {
    ChatTemplate template = ChatTemplate.of(
        "{% for m in messages %}{% if m.content | length > 10 %}long:{% else %}short:{% endif %}"
            + "{{ m.content }};{% endfor %}", Map.of(), InstantSource.system());
    ContentSkeletons skeletons = new ContentSkeletons(template, 1 << 20);
    for (String c : List.of("abc", "abcdefghijklmnop", "xy")) {
      ChatInput input = new ChatInput(List.of(message("user", c)), null, null, true, false, Map.of());
      assertThat(skeletons.render(input, CONTEXT)).isEqualTo(template.render(input));
    }
    assertThat(skeletons.substituted()).isZero();
  }

  @Test
  void literalsAreSortedByUse() {
    ContentSkeletons.Literals l = ContentSkeletons.Literals.of(List.of(INSPECTING));
    assertThat(l.searched()).containsExactlyInAnyOrder("</x>");
    assertThat(l.stripped()).isEqualTo("\n.");
    assertThat(l.compared()).contains("stop");
  }

  private static ChatInput conversation(SplittableRandom random, int messages) {
    List<Map<String, Object>> out = new ArrayList<>();
    for (int i = 0; i < messages; i++) {
      StringBuilder c = new StringBuilder();
      int pieces = random.nextInt(5);
      for (int p = 0; p < pieces; p++) {
        c.append(PIECES[random.nextInt(PIECES.length)]);
      }
      out.add(message(i % 2 == 0 ? "user" : "assistant", c.toString()));
    }
    return new ChatInput(out, null, null, random.nextBoolean(), false, Map.of());
  }

  private static Map<String, Object> message(String role, String content) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("role", role);
    m.put("content", content);
    return m;
  }
}
