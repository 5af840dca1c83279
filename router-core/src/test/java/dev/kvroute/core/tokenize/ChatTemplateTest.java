package dev.kvroute.core.tokenize;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.InstantSource;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Jinja features HF chat templates use that Jinjava lacks or does differently, each checked
 * against what Python's Jinja2 3.1.6 renders in transformers' environment (trim_blocks,
 * lstrip_blocks, loop controls, transformers' tojson): the expected strings below are its output.
 */
class ChatTemplateTest {
  private static final InstantSource CLOCK = InstantSource.fixed(Instant.parse("2024-07-26T10:00:00Z"));

  private static String render(String template, Map<String, Object> vars) {
    ChatTemplate t = ChatTemplate.of(template, Map.of(), CLOCK);
    List<Map<String, Object>> messages = List.of(Map.of("role", "user", "content", "x"));
    @SuppressWarnings("unchecked")
    List<Map<String, Object>> given = (List<Map<String, Object>>) vars.getOrDefault("messages", messages);
    Map<String, Object> kwargs = new LinkedHashMap<>(vars);
    kwargs.remove("messages");
    return t.render(new ChatInput(given, null, null, true, false, kwargs));
  }

  private static String render(String template) {
    return render(template, Map.of());
  }

  @Test
  void pythonStringMethods() {
    assertThat(render("{% if 'abc'.startswith('a') and 'abc'.endswith(('x','c')) %}yes{% endif %}")).isEqualTo("yes");
    assertThat(render("{{ 'a</think>b</think>c'.split('</think>')[-1] }}|{{ ' a  b '.split()|length }}|{{ 'x,y'.split(',')[0] }}"))
        .isEqualTo("c|2|x");
    assertThat(render("[{{ '\\n\\nx\\n'.lstrip('\\n') }}][{{ '\u3000 x \\t'.strip() }}][{{ 'xxay'.rstrip('y') }}]"))
        .isEqualTo("[x\n][x][xxa]");
    assertThat(render("{{ d.get('x', 'dflt') }}|{{ d.get('a') }}|{{ 'a-b-c'.replace('-', '+') }}|{{ 'hello world'.title() }}",
        Map.of("d", Map.of("a", 1L)))).isEqualTo("dflt|1|a+b+c|Hello World");
  }

  @Test
  void reverseSliceAndNamespaceWithAnExpressionArgument() {
    assertThat(render("{{ [1,2,3][::-1]|join(',') }}|{{ 'abc'[::-1] }}")).isEqualTo("3,2,1|cba");
    assertThat(render("{% set ns = namespace(found=false, last=messages|length - 1) %}{% for m in messages[::-1] %}"
        + "{% if m.content == '2' and not ns.found %}{% set ns.found = true %}{% set ns.last = loop.index0 %}{% endif %}"
        + "{% endfor %}{{ ns.last }}",
        Map.of("messages", List.of(Map.of("content", "1"), Map.of("content", "2"), Map.of("content", "3")))))
        .isEqualTo("1");
  }

  @Test
  void tojsonIsPythonsJsonDumps() {
    Map<String, Object> tool = new LinkedHashMap<>();
    tool.put("name", "f");
    tool.put("d", "«q» \"e\"\n\t\u0001");
    tool.put("n", null);
    tool.put("b", true);
    tool.put("i", 3L);
    tool.put("x", 1.5);
    tool.put("e", 1e-5);
    tool.put("big", 1e20);
    tool.put("l", List.of(1L, List.of()));
    tool.put("o", Map.of());
    assertThat(render("{{ tool|tojson }}", Map.of("tool", tool))).isEqualTo(
        "{\"name\": \"f\", \"d\": \"«q» \\\"e\\\"\\n\\t\\u0001\", \"n\": null, \"b\": true, \"i\": 3, \"x\": 1.5, "
            + "\"e\": 1e-05, \"big\": 1e+20, \"l\": [1, []], \"o\": {}}");
    Map<String, Object> nested = new LinkedHashMap<>();
    nested.put("a", List.of(1L, 2L));
    Map<String, Object> c = new LinkedHashMap<>();
    c.put("c", null);
    nested.put("b", c);
    assertThat(render("{{ tool|tojson(indent=2) }}", Map.of("tool", nested)))
        .isEqualTo("{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {\n    \"c\": null\n  }\n}");
  }

  @Test
  void itemsLoopControlsTrimAndWhitespaceControl() {
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("b", 1L);
    d.put("a", 2L);
    assertThat(render("{% for k, v in d|items %}{{ k }}={{ v }};{% endfor %}", Map.of("d", d))).isEqualTo("b=1;a=2;");
    assertThat(render("{% for m in messages %}{% if m.role == 'system' %}{% continue %}{% endif %}"
        + "{{ m.role }}:{{ m.content | trim }}|{% if loop.last %}{% break %}{% endif %}{% endfor %}",
        Map.of("messages", List.of(Map.of("role", "system", "content", "s"),
            Map.of("role", "user", "content", "\u00a0 hi \u3000"), Map.of("role", "assistant", "content", "yo")))))
        .isEqualTo("user:hi|assistant:yo|");
    assertThat(render("{%- for m in messages %}\n    {{- m.content.upper() + '\\n' }}\n{%- endfor %}\n"
        + "{%- if add_generation_prompt %}\n    {{- 'GEN' }}\n{%- endif %}",
        Map.of("messages", List.of(Map.of("content", "a"), Map.of("content", "b"))))).isEqualTo("A\nB\nGEN");
    assertThat(render("{{- ' x ' -}}  {#- c -#}  y")).isEqualTo(" x y");
  }

  @Test
  void raiseExceptionRejectsTheRequestWithItsMessage() {
    assertThatThrownBy(() -> render("{% if messages[0].role != 'system' %}{{ raise_exception('Conversation must start with system') }}{% endif %}"))
        .isInstanceOf(ChatTemplateException.class)
        .hasMessage("Conversation must start with system");
    assertThatThrownBy(() -> render("{{ messages[0].content.nosuchmethod(1) }}"))
        .isInstanceOf(ChatTemplateException.class)
        .hasMessageContaining("chat template error");
  }

  @Test
  void aMessageThatLooksLikeJinjaIsRenderedAsText() {
    // Jinjava re-renders a value holding {{ }} unless told not to; Jinja never does.
    assertThat(render("{{ messages[0].content }}",
        Map.of("messages", List.of(Map.of("role", "user", "content", "{{ 7 * 7 }} {% if true %}x{% endif %}")))))
        .isEqualTo("{{ 7 * 7 }} {% if true %}x{% endif %}");
  }

  @Test
  void strftimeNowReadsTheInjectedClock() {
    assertThat(render("{{ strftime_now('%d %b %Y') }}")).isEqualTo("26 Jul 2024");
  }

  @Test
  void templateThatDoesNotParseFailsAtLoad() {
    assertThatThrownBy(() -> ChatTemplate.of("{% for m in messages %}{{ m }", Map.of(), CLOCK))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("does not parse");
  }

  @Test
  void loadPrefersChatTemplateJinjaThenTheConfigsDefaultOrToolUseTemplate(@TempDir Path dir) throws Exception {
    Files.writeString(dir.resolve("tokenizer_config.json"),
        "{\"chat_template\":[{\"name\":\"default\",\"template\":\"D{{ messages|length }}\"},"
            + "{\"name\":\"tool_use\",\"template\":\"T{{ tools|length }}\"}],\"bos_token\":{\"content\":\"<s>\"}}");
    ChatTemplate t = ChatTemplate.load(dir, HfSpecialTokens.read(dir), CLOCK);
    List<Map<String, Object>> one = List.of(Map.of("role", "user", "content", "x"));
    assertThat(t.render(new ChatInput(one, null, null, true, false, Map.of()))).isEqualTo("D1");
    assertThat(t.render(new ChatInput(one, List.of(Map.of(), Map.of()), null, true, false, Map.of()))).isEqualTo("T2");
    assertThat(t.specialTokens()).containsEntry("bos_token", "<s>").containsEntry("eos_token", null);
    Files.writeString(dir.resolve("chat_template.jinja"), "J{{ bos_token }}");
    assertThat(ChatTemplate.load(dir, HfSpecialTokens.read(dir), CLOCK)
        .render(new ChatInput(one, null, null, true, false, Map.of()))).isEqualTo("J<s>");
  }

  @Test
  void missingTemplateSaysSoAtLoad(@TempDir Path dir) throws Exception {
    assertThatThrownBy(() -> ChatTemplate.load(dir, Map.of(), CLOCK))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no chat template");
    Files.writeString(dir.resolve("tokenizer_config.json"), "{\"eos_token\":\"</s>\"}");
    assertThatThrownBy(() -> ChatTemplate.load(dir, Map.of(), CLOCK))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no chat_template");
  }

  @Test
  void pythonFloatRepr() {
    assertThat(PyJson.pyFloat(0.1)).isEqualTo("0.1");
    assertThat(PyJson.pyFloat(100.0)).isEqualTo("100.0");
    assertThat(PyJson.pyFloat(1e16)).isEqualTo("1e+16");
    assertThat(PyJson.pyFloat(123456789012345.6)).isEqualTo("123456789012345.6");
    assertThat(PyJson.pyFloat(0.0001)).isEqualTo("0.0001");
    assertThat(PyJson.pyFloat(-2.5e-7)).isEqualTo("-2.5e-07");
  }
}
