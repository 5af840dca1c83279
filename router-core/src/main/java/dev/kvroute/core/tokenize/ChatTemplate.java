package dev.kvroute.core.tokenize;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.el.JinjavaInterpreterResolver;
import com.hubspot.jinjava.interpret.Context;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.interpret.TemplateError;
import com.hubspot.jinjava.lib.filter.Filter;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import com.hubspot.jinjava.tree.Node;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.InstantSource;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.TextStyle;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;
import jinjava.javax.el.CompositeELResolver;

/**
 * A model's chat template, rendered as transformers' {@code apply_chat_template(tokenize=False)}
 * renders it for vLLM: Jinja with {@code trim_blocks} and {@code lstrip_blocks}, loop controls,
 * and the variables {@code messages}, {@code tools}, {@code documents}, {@code
 * add_generation_prompt}, the tokenizer's special tokens ({@code bos_token}, {@code eos_token},
 * {@code pad_token}, {@code unk_token}...), then the request's {@code chat_template_kwargs}.
 *
 * <p>The engine is HubSpot's Jinjava, completed with what HF templates use and Jinjava lacks:
 * {@code raise_exception(msg)}, {@code strftime_now(format)} (on the injected clock, UTC), a
 * {@code tojson} filter that writes Python's {@code json.dumps} ({@link PyJson}), {@code |items},
 * {@code [::-1]}, and Python's string and dict methods ({@link PyMethodResolver}). With {@code
 * continue_final_message} the text is cut after the final message's content, as transformers does.
 *
 * <p>Source: {@code chat_template.jinja} in the tokenizer directory if present (transformers reads
 * it first), else {@code chat_template} of {@code tokenizer_config.json} (a string, or a list of
 * named templates: {@code tool_use} when the request has tools and the list has it, else {@code
 * default}).
 *
 * <p>Thread-safe: templates are parsed once; every render has its own interpreter.
 */
public final class ChatTemplate {
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final Pattern REVERSE_SLICE = Pattern.compile("\\[\\s*:\\s*:\\s*-\\s*1\\s*\\]");
  private static final Pattern CONTENT_LOOP = Pattern.compile(
      "for\\s+\\w+\\s+in\\s+\\w+(\\.content|\\[\\s*['\"]content['\"]\\s*\\])");
  private static final ThreadLocal<InstantSource> CLOCK = new ThreadLocal<>();

  private final Jinjava jinjava;
  private final Node defaultTemplate;
  private final Node toolTemplate;
  private final Map<String, Object> specialTokens;
  private final boolean stringContent;
  private final InstantSource clock;
  /** The Jinja sources (the default template, then the tool-use one if any). */
  private final List<String> sources;
  /** Whether a render reads the clock: 0 no, 1 the date only, 2 the time of day too. */
  private final int clockUse;

  private ChatTemplate(
      String source, String toolSource, Map<String, Object> specialTokens, InstantSource clock) {
    this.clock = Objects.requireNonNull(clock, "clock");
    this.specialTokens = Collections.unmodifiableMap(new LinkedHashMap<>(specialTokens));
    CompositeELResolver resolver = new CompositeELResolver();
    resolver.add(new PyMethodResolver());
    resolver.add(JinjavaInterpreterResolver.DEFAULT_RESOLVER_READ_WRITE);
    JinjavaConfig config = JinjavaConfig.newBuilder()
        .withTrimBlocks(true)
        .withLstripBlocks(false) // Jinjava strips before any tag, Jinja only at a line's start
        .withElResolver(resolver)
        .withMaxStringLength(0)
        .withMaxOutputSize(0)
        .withNestedInterpretationEnabled(false) // Jinja never renders a value's own {{ }} again
        .withLegacyOverrides(com.hubspot.jinjava.LegacyOverrides.newBuilder()
            .withUseTrimmingForNotesAndExpressions(true) // {{- -}} and {#- -#} trim as in Jinja
            .build())
        .build();
    this.jinjava = new Jinjava(config);
    var global = jinjava.getGlobalContext();
    global.registerFunction(new ELFunctionDefinition(
        "", "raise_exception", ChatTemplate.class, "raiseException", Object.class));
    global.registerFunction(new ELFunctionDefinition(
        "", "strftime_now", ChatTemplate.class, "strftimeNow", String.class));
    global.registerFilter(new ToJsonFilter());
    global.registerFilter(new ItemsFilter());
    global.registerFilter(new ReverseFilter());
    global.registerFilter(new TrimFilter());
    this.defaultTemplate = parse(source);
    this.toolTemplate = toolSource == null ? defaultTemplate : parse(toolSource);
    this.sources = toolSource == null ? List.of(source) : List.of(source, toolSource);
    String all = String.join("\n", sources);
    this.clockUse = !all.contains("strftime_now") ? 0
        : Pattern.compile("%[HIMSpXcTRsfz]").matcher(all).find() ? 2 : 1;
    this.stringContent = !CONTENT_LOOP.matcher(source).find();
  }

  /**
   * The chat template of the tokenizer directory {@code dir} (see the type's documentation for
   * where it is read from), with {@code specialTokens} as template variables.
   *
   * @throws IllegalArgumentException if the directory has no chat template, or it does not parse
   * @throws IOException if a file cannot be read or {@code tokenizer_config.json} is not JSON
   */
  public static ChatTemplate load(Path dir, Map<String, Object> specialTokens, InstantSource clock)
      throws IOException {
    Path jinja = dir.resolve("chat_template.jinja");
    if (Files.isRegularFile(jinja)) {
      return of(Files.readString(jinja, StandardCharsets.UTF_8), specialTokens, clock);
    }
    Path config = dir.resolve("tokenizer_config.json");
    if (!Files.isRegularFile(config)) {
      throw new IllegalArgumentException(dir + ": no chat template (expected chat_template.jinja, "
          + "or tokenizer_config.json with a chat_template)");
    }
    JsonNode root = MAPPER.readTree(config.toFile());
    JsonNode t = root.get("chat_template");
    if (t != null && t.isTextual()) {
      return new ChatTemplate(t.textValue(), null, specialTokens, clock);
    }
    if (t != null && t.isArray()) {
      String def = null;
      String tool = null;
      for (JsonNode named : t) {
        String name = named.path("name").asText();
        if (name.equals("default")) {
          def = named.path("template").asText(null);
        } else if (name.equals("tool_use")) {
          tool = named.path("template").asText(null);
        }
      }
      if (def != null) {
        return new ChatTemplate(def, tool, specialTokens, clock);
      }
    }
    throw new IllegalArgumentException(config + ": no chat_template (expected a string or a list "
        + "with a template named \"default\"), and no chat_template.jinja beside it");
  }

  /**
   * A chat template from its Jinja source.
   *
   * @throws IllegalArgumentException if the source does not parse
   */
  public static ChatTemplate of(String source, Map<String, Object> specialTokens, InstantSource clock) {
    return new ChatTemplate(source, null, specialTokens, clock);
  }

  /**
   * Whether the template takes a message's content as a string (vLLM's {@code "string"} content
   * format, detected as vLLM's {@code auto} mode does: the template never loops over the content),
   * rather than as a list of parts ({@code "openai"}).
   */
  public boolean stringContent() {
    return stringContent;
  }

  /** The Jinja sources: the default template, then the tool-use template if there is one. */
  List<String> sources() {
    return sources;
  }

  /**
   * What of the clock a render may print, for keys of cached renderings: empty when the template
   * never calls {@code strftime_now}, else the clock's UTC day, or its epoch second when a format
   * in the source may print the time of day.
   */
  String clockKey() {
    return switch (clockUse) {
      case 0 -> "";
      case 1 -> Long.toString(Math.floorDiv(clock.instant().getEpochSecond(), 86_400));
      default -> Long.toString(clock.instant().getEpochSecond());
    };
  }

  /** The special-token variables the template sees ({@code bos_token}, {@code eos_token}...). */
  public Map<String, Object> specialTokens() {
    return specialTokens;
  }

  /**
   * The prompt text of {@code input}.
   *
   * @throws ChatTemplateException if the template raises an error for this input
   */
  public String render(ChatInput input) {
    Map<String, Object> vars = new HashMap<>(specialTokens);
    vars.put("messages", input.messages());
    vars.put("tools", input.tools());
    vars.put("documents", input.documents());
    vars.put("add_generation_prompt", input.addGenerationPrompt());
    vars.putAll(input.kwargs());
    Node template = input.tools() != null && !input.tools().isEmpty() ? toolTemplate : defaultTemplate;
    String text = render(template, vars);
    if (input.continueFinalMessage()) {
      text = cutAfterFinalMessage(text, input.messages().get(input.messages().size() - 1));
    }
    return text;
  }

  private String render(Node template, Map<String, Object> vars) {
    Context context = new Context(jinjava.getGlobalContext(), vars);
    JinjavaInterpreter interpreter = new JinjavaInterpreter(jinjava, context, jinjava.getGlobalConfig());
    JinjavaInterpreter.pushCurrent(interpreter);
    InstantSource previous = CLOCK.get();
    CLOCK.set(clock);
    String out;
    try {
      out = interpreter.render(template);
    } catch (ChatTemplateException e) {
      throw e;
    } catch (RuntimeException e) {
      throw new ChatTemplateException("chat template error: " + messageOf(e), e);
    } finally {
      CLOCK.set(previous);
      JinjavaInterpreter.popCurrent();
    }
    for (TemplateError error : interpreter.getErrors()) {
      if (error.getSeverity() == TemplateError.ErrorType.FATAL) {
        throw new ChatTemplateException(errorMessage(error));
      }
    }
    return out;
  }

  private static String errorMessage(TemplateError error) {
    for (Throwable t = error.getException(); t != null; t = t.getCause()) {
      if (t instanceof ChatTemplateException c) {
        return c.getMessage();
      }
    }
    return "chat template error: " + error.getMessage();
  }

  private static String messageOf(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof ChatTemplateException c) {
        return c.getMessage();
      }
    }
    return e.getMessage();
  }

  private Node parse(String source) {
    String rewritten = wrapNamespaceArguments(
        REVERSE_SLICE.matcher(lstripBlocks(source)).replaceAll("|py_reverse"));
    JinjavaInterpreter interpreter = jinjava.newInterpreter();
    JinjavaInterpreter.pushCurrent(interpreter);
    try {
      Node node = interpreter.parse(rewritten);
      for (TemplateError error : interpreter.getErrors()) {
        if (error.getSeverity() == TemplateError.ErrorType.FATAL) {
          throw new IllegalArgumentException("chat template does not parse: " + error.getMessage());
        }
      }
      return node;
    } finally {
      JinjavaInterpreter.popCurrent();
    }
  }

  /**
   * Jinja's {@code lstrip_blocks}: the spaces and tabs between a line's start and a block or
   * comment tag ({@code {%} or {@code {#}, not {@code {%+}) are removed.
   */
  static String lstripBlocks(String source) {
    StringBuilder out = new StringBuilder(source.length());
    int lineStart = 0; // in out
    for (int i = 0; i < source.length(); i++) {
      char c = source.charAt(i);
      if (c == '{' && i + 1 < source.length() && (source.charAt(i + 1) == '%' || source.charAt(i + 1) == '#')
          && !(i + 2 < source.length() && source.charAt(i + 2) == '+')) {
        int j = out.length();
        while (j > lineStart && (out.charAt(j - 1) == ' ' || out.charAt(j - 1) == '\t')) {
          j--;
        }
        if (j == lineStart) {
          out.setLength(lineStart);
        }
      }
      out.append(c);
      if (c == '\n') {
        lineStart = out.length();
      }
    }
    return out.toString();
  }

  /**
   * {@code namespace(a=1, b=x|length - 1)} with each keyword argument's value in parentheses:
   * Jinjava binds {@code b=x|length} before the {@code - 1}, Jinja binds the whole expression.
   */
  static String wrapNamespaceArguments(String source) {
    StringBuilder out = new StringBuilder(source.length() + 16);
    int from = 0;
    for (int at = source.indexOf("namespace(", from); at >= 0; at = source.indexOf("namespace(", from)) {
      int open = at + "namespace(".length();
      int close = matchingParen(source, open);
      if (close < 0) {
        break;
      }
      out.append(source, from, open);
      List<String> args = splitTopLevel(source.substring(open, close));
      for (int i = 0; i < args.size(); i++) {
        String arg = args.get(i);
        java.util.regex.Matcher m = KEYWORD_ARG.matcher(arg);
        out.append(i == 0 ? "" : ",");
        out.append(m.matches() ? m.group(1) + "=(" + m.group(2) + ")" : arg);
      }
      out.append(')');
      from = close + 1;
    }
    return out.append(source, from, source.length()).toString();
  }

  private static final Pattern KEYWORD_ARG = Pattern.compile("(?s)(\\s*\\w+\\s*)=(?!=)(.*\\S.*)");

  private static int matchingParen(String s, int from) {
    int depth = 1;
    char quote = 0;
    for (int i = from; i < s.length(); i++) {
      char c = s.charAt(i);
      if (quote != 0) {
        if (c == '\\') {
          i++;
        } else if (c == quote) {
          quote = 0;
        }
      } else if (c == '\'' || c == '"') {
        quote = c;
      } else if (c == '(' || c == '[' || c == '{') {
        depth++;
      } else if (c == ')' || c == ']' || c == '}') {
        if (--depth == 0) {
          return c == ')' ? i : -1;
        }
      }
    }
    return -1;
  }

  private static List<String> splitTopLevel(String args) {
    List<String> out = new ArrayList<>();
    int depth = 0;
    char quote = 0;
    int start = 0;
    for (int i = 0; i < args.length(); i++) {
      char c = args.charAt(i);
      if (quote != 0) {
        if (c == '\\') {
          i++;
        } else if (c == quote) {
          quote = 0;
        }
      } else if (c == '\'' || c == '"') {
        quote = c;
      } else if (c == '(' || c == '[' || c == '{') {
        depth++;
      } else if (c == ')' || c == ']' || c == '}') {
        depth--;
      } else if (c == ',' && depth == 0) {
        out.add(args.substring(start, i));
        start = i + 1;
      }
    }
    out.add(args.substring(start));
    return out;
  }

  private static String cutAfterFinalMessage(String text, Map<String, Object> finalMessage) {
    Object content = finalMessage.get("content");
    String last = content instanceof String s ? s : "";
    if (content instanceof List<?> parts && !parts.isEmpty()
        && parts.get(parts.size() - 1) instanceof Map<?, ?> p && p.get("text") instanceof String t) {
      last = t;
    }
    String stripped = last.strip();
    int at = text.lastIndexOf(stripped);
    if (stripped.isEmpty() || at < 0) {
      throw new ChatTemplateException("continue_final_message: the final message's content does not "
          + "appear in the rendered prompt");
    }
    return text.substring(0, at + stripped.length());
  }

  // ---- functions and filters -----------------------------------------------------------------

  /** Jinja {@code raise_exception(message)}: the request is rejected with that message. */
  public static Object raiseException(Object message) {
    throw new ChatTemplateException(String.valueOf(message));
  }

  /** transformers' {@code strftime_now(format)}: the clock's time, UTC, in Python's strftime. */
  public static String strftimeNow(String format) {
    InstantSource clock = CLOCK.get();
    ZonedDateTime t = (clock == null ? InstantSource.system() : clock).instant().atZone(ZoneOffset.UTC);
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < format.length(); i++) {
      char c = format.charAt(i);
      if (c != '%' || i + 1 == format.length()) {
        out.append(c);
        continue;
      }
      char f = format.charAt(++i);
      switch (f) {
        case 'd' -> out.append(String.format("%02d", t.getDayOfMonth()));
        case '-' -> {
          if (i + 1 < format.length() && format.charAt(i + 1) == 'd') {
            i++;
            out.append(t.getDayOfMonth());
          } else {
            out.append("%-");
          }
        }
        case 'm' -> out.append(String.format("%02d", t.getMonthValue()));
        case 'Y' -> out.append(t.getYear());
        case 'y' -> out.append(String.format("%02d", t.getYear() % 100));
        case 'b' -> out.append(t.getMonth().getDisplayName(TextStyle.SHORT, Locale.US));
        case 'B' -> out.append(t.getMonth().getDisplayName(TextStyle.FULL, Locale.US));
        case 'a' -> out.append(t.getDayOfWeek().getDisplayName(TextStyle.SHORT, Locale.US));
        case 'A' -> out.append(t.getDayOfWeek().getDisplayName(TextStyle.FULL, Locale.US));
        case 'H' -> out.append(String.format("%02d", t.getHour()));
        case 'M' -> out.append(String.format("%02d", t.getMinute()));
        case 'S' -> out.append(String.format("%02d", t.getSecond()));
        case 'j' -> out.append(String.format("%03d", t.getDayOfYear()));
        case '%' -> out.append('%');
        default -> out.append('%').append(f);
      }
    }
    return out.toString();
  }

  /** transformers' {@code tojson}: {@code json.dumps(x, ensure_ascii=False, indent=indent)}. */
  static final class ToJsonFilter implements Filter {
    @Override
    public String getName() {
      return "tojson";
    }

    @Override
    public Object filter(Object var, JinjavaInterpreter interpreter, String... args) {
      int indent = args.length > 0 && args[0] != null ? Integer.parseInt(args[0].trim()) : -1;
      return PyJson.dumps(var, indent);
    }

    @Override
    public Object filter(Object var, JinjavaInterpreter interpreter, Object[] args, Map<String, Object> kwargs) {
      Object indent = kwargs.get("indent");
      if (indent == null && args.length > 0) {
        indent = args[0];
      }
      return PyJson.dumps(var, indent instanceof Number n ? n.intValue()
          : indent == null ? -1 : Integer.parseInt(indent.toString().trim()));
    }
  }

  /** Jinja's {@code dict|items}: a list of {@code [key, value]} pairs in the map's order. */
  static final class ItemsFilter implements Filter {
    @Override
    public String getName() {
      return "items";
    }

    @Override
    public Object filter(Object var, JinjavaInterpreter interpreter, String... args) {
      List<Object> out = new ArrayList<>();
      if (var instanceof Map<?, ?> m) {
        for (Map.Entry<?, ?> e : m.entrySet()) {
          out.add(java.util.Arrays.asList(e.getKey(), e.getValue()));
        }
      }
      return out;
    }
  }

  /** Jinja's {@code trim}: Python's {@code str.strip()} (Unicode whitespace, not just {@code <= ' '}). */
  static final class TrimFilter implements Filter {
    @Override
    public String getName() {
      return "trim";
    }

    @Override
    public Object filter(Object var, JinjavaInterpreter interpreter, String... args) {
      if (var == null) {
        return "";
      }
      String s = var.toString();
      int start = 0;
      int end = s.length();
      String chars = args.length > 0 ? args[0] : null;
      while (start < end && (chars == null ? PyMethodResolver.isPySpace(s.charAt(start))
          : chars.indexOf(s.charAt(start)) >= 0)) {
        start++;
      }
      while (end > start && (chars == null ? PyMethodResolver.isPySpace(s.charAt(end - 1))
          : chars.indexOf(s.charAt(end - 1)) >= 0)) {
        end--;
      }
      return s.substring(start, end);
    }
  }

  /** Python's {@code x[::-1]} (the template source is rewritten to {@code x|py_reverse}). */
  static final class ReverseFilter implements Filter {
    @Override
    public String getName() {
      return "py_reverse";
    }

    @Override
    public Object filter(Object var, JinjavaInterpreter interpreter, String... args) {
      if (var instanceof String s) {
        return new StringBuilder(s).reverse().toString();
      }
      List<Object> out = new ArrayList<>();
      if (var instanceof Iterable<?> items) {
        for (Object o : items) {
          out.add(o);
        }
      } else if (var instanceof Object[] array) {
        out.addAll(java.util.Arrays.asList(array));
      }
      Collections.reverse(out);
      return out;
    }
  }
}
