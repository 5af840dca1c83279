package dev.kvroute.core.tokenize;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.kvroute.core.request.TextHash;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A chat template's rendering of a conversation whose messages are plain {@code role} and string
 * {@code content}, produced without running the template: the conversation's <em>skeleton</em> (the
 * same messages with each content replaced by a marker, {@code U+E000 i U+E001}) is rendered once
 * per shape (the roles in order and the request's other template inputs), and each request's text
 * is that skeleton with the markers replaced by its contents. Jinjava costs a few hundred
 * microseconds per render whatever the text's length, while a substitution costs a copy.
 *
 * <h2>When that equals a real rendering</h2>
 *
 * When the template treats each content as an opaque string: it prints it, concatenates it, tests
 * whether it is empty, but its output does not depend on what the content holds. HF templates do
 * look inside contents (Qwen3 tests {@code '</think>' in content} and {@code
 * content.startswith('<tool_response>')}, and strips newlines; Llama's templates {@code trim} it),
 * so a request is rendered by substitution only when every content:
 *
 * <ul>
 *   <li>is a string with at least one character no strip or trim removes (whitespace, controls, and
 *       any character a literal argument of {@code strip}, {@code lstrip} or {@code rstrip} in the
 *       template names); the runs of such characters at its two ends stay in the marker ({@code
 *       lead U+E000 i U+E001 trail}) and in the shape's key, so a strip removes from the marker what
 *       it removes from the content, and only the middle is substituted;
 *   <li>contains none of the literals the template searches for: the left operand of {@code in},
 *       and the literal argument of {@code startswith}, {@code endswith}, {@code split}, {@code
 *       replace}, {@code find}, {@code index}, {@code count}, {@code partition} and their variants;
 *   <li>equals none of the template's other string literals (what it compares with {@code ==});
 *   <li>holds none of the marker's characters ({@code U+E000} to {@code U+E002});
 * </ul>
 *
 * and every message has no key besides {@code role} and {@code content}. A template that prints the
 * clock ({@code strftime_now}) has its skeletons keyed by the day, or by the second when a format
 * in its source may print the time of day. A skeleton is kept only if
 * substituting the first request's contents gives exactly the text the template renders for that
 * request (both are computed then); otherwise that shape is remembered as not substitutable and
 * always rendered; likewise if the template renders the skeleton with markers {@value #PADDING}
 * characters longer into other text (it branches on a content's length). What these checks cannot
 * see (a test on a content's length beyond that, or on characters at fixed positions) is caught only
 * by comparing the final tokens with a full rendering, which {@link PrefixRenderCache} does on a
 * sample and {@code HfChatTemplateEquivalenceTest} does for every prefix of its corpus.
 *
 * <p>Bounded by estimated bytes (two per skeleton char plus an overhead per entry). Thread-safe.
 */
final class ContentSkeletons {
  private static final char OPEN = '\uE000';
  private static final char CLOSE = '\uE001';
  /** Pads the second marker of each content, to tell templates that branch on a content's length. */
  private static final char PAD = '\uE002';
  static final int PADDING = 64;
  /** A quoted string in the template source (single or double quotes, backslash escapes). */
  private static final Pattern LITERAL = Pattern.compile("'((?:[^'\\\\]|\\\\.)*)'|\"((?:[^\"\\\\]|\\\\.)*)\"");
  private static final List<Object> NOT_SUBSTITUTABLE = List.of();

  private final ChatTemplate template;
  /** Literals the template searches for in a string: a content must not contain one. */
  private final String[] searched;
  /** The template's other literals: a content must not equal one. */
  private final Set<String> compared;
  /** Characters the template strips from a string's ends besides whitespace. */
  private final String stripped;
  /** A skeleton as literal text and marker indexes ({@code Integer}), or {@link #NOT_SUBSTITUTABLE}. */
  private final Cache<TextHash, List<Object>> skeletons;
  private final AtomicLong substituted = new AtomicLong();

  ContentSkeletons(ChatTemplate template, long maxBytes) {
    this.template = template;
    Literals l = Literals.of(template.sources());
    this.searched = l.searched().toArray(String[]::new);
    this.compared = l.compared();
    this.stripped = l.stripped();
    this.skeletons = Caffeine.newBuilder()
        .maximumWeight(Math.max(0, maxBytes))
        .weigher((TextHash k, List<Object> parts) -> {
          long chars = 64;
          for (Object p : parts) {
            chars += p instanceof String s ? s.length() : 4;
          }
          return (int) Math.min(Integer.MAX_VALUE, 2 * chars);
        })
        .executor(Runnable::run)
        .build();
  }

  /** Renders answered by substitution so far. */
  long substituted() {
    return substituted.get();
  }

  /**
   * {@code template.render(input)}, by substitution when {@code input} qualifies (see the type's
   * documentation), else by the template.
   *
   * @param context a hash of the request's template inputs other than the messages and {@code
   *     add_generation_prompt} (tools, documents, kwargs)
   * @throws ChatTemplateException as the template does
   */
  String render(ChatInput input, TextHash context) {
    List<Map<String, Object>> messages = input.messages();
    String[][] ends = new String[messages.size()][];
    String[] contents = input.continueFinalMessage() ? null : contents(messages, ends);
    if (contents == null) {
      return template.render(input);
    }
    StringBuilder shape = new StringBuilder(16 * messages.size());
    shape.append(context.high()).append(':').append(context.low()).append(':').append(template.clockKey())
        .append(':').append(input.addGenerationPrompt());
    for (int i = 0; i < ends.length; i++) {
      shape.append('\0').append((String) messages.get(i).get("role"))
          .append('\1').append(ends[i][0]).append('\1').append(ends[i][1]);
    }
    TextHash key = TextHash.of(shape.toString());
    List<Object> parts = skeletons.getIfPresent(key);
    if (parts == null) {
      String real = template.render(input);
      parts = skeleton(input, contents, ends, real);
      skeletons.put(key, parts);
      return real;
    }
    if (parts == NOT_SUBSTITUTABLE) {
      return template.render(input);
    }
    substituted.incrementAndGet();
    return substitute(parts, contents);
  }

  /**
   * The parts of the skeleton of {@code input}, if substituting its contents gives {@code real} and
   * the template renders markers {@value #PADDING} characters longer into the same parts (a template
   * that branches on a content's length between the two is not substituted).
   */
  private List<Object> skeleton(ChatInput input, String[] contents, String[][] ends, String real) {
    List<Object> parts = parts(markedRender(input, ends, ""), contents.length);
    List<Object> padded = parts(markedRender(input, ends, String.valueOf(PAD).repeat(PADDING)), contents.length);
    if (parts == null || !parts.equals(padded)) {
      return NOT_SUBSTITUTABLE;
    }
    return substitute(parts, contents).equals(real) ? List.copyOf(parts) : NOT_SUBSTITUTABLE;
  }

  /** The rendering of {@code input} with content {@code i} replaced by its marker; null on an error. */
  private String markedRender(ChatInput input, String[][] ends, String padding) {
    List<Map<String, Object>> marked = new ArrayList<>(ends.length);
    for (int i = 0; i < ends.length; i++) {
      Map<String, Object> m = new LinkedHashMap<>(input.messages().get(i));
      m.put("content", ends[i][0] + OPEN + i + padding + CLOSE + ends[i][1]);
      marked.add(m);
    }
    try {
      return template.render(new ChatInput(marked, input.tools(), input.documents(),
          input.addGenerationPrompt(), false, input.kwargs()));
    } catch (ChatTemplateException e) {
      return null;
    }
  }

  /** {@code text} cut at its markers (literal strings and message indexes); null if one was altered. */
  private static List<Object> parts(String text, int messages) {
    if (text == null) {
      return null;
    }
    List<Object> parts = new ArrayList<>();
    int at = 0;
    for (int open = text.indexOf(OPEN); open >= 0; open = text.indexOf(OPEN, at)) {
      int close = text.indexOf(CLOSE, open);
      int digits = open + 1;
      while (close > 0 && digits < close && Character.isDigit(text.charAt(digits))) {
        digits++;
      }
      for (int p = digits; close > 0 && p < close; p++) {
        if (text.charAt(p) != PAD) {
          return null;
        }
      }
      int index;
      try {
        index = close < 0 || digits == open + 1 ? -1 : Integer.parseInt(text, open + 1, digits, 10);
      } catch (NumberFormatException e) {
        index = -1;
      }
      if (index < 0 || index >= messages) {
        return null; // a marker the template cut or altered
      }
      parts.add(text.substring(at, open));
      parts.add(index);
      at = close + 1;
    }
    parts.add(text.substring(at));
    return parts;
  }

  private static String substitute(List<Object> parts, String[] contents) {
    int length = 0;
    for (Object p : parts) {
      length += p instanceof String s ? s.length() : contents[(Integer) p].length();
    }
    StringBuilder out = new StringBuilder(length);
    for (Object p : parts) {
      out.append(p instanceof String s ? s : contents[(Integer) p]);
    }
    return out.toString();
  }

  /**
   * The middle of each message's content if every message qualifies (see the type's documentation),
   * else null; {@code ends[i]} gets the runs of strippable characters around message {@code i}'s.
   */
  private String[] contents(List<Map<String, Object>> messages, String[][] ends) {
    String[] out = new String[messages.size()];
    for (int i = 0; i < out.length; i++) {
      Map<String, Object> m = messages.get(i);
      if (m.size() != 2 || !(m.get("role") instanceof String) || !(m.get("content") instanceof String c)
          || c.indexOf(OPEN) >= 0 || c.indexOf(CLOSE) >= 0 || c.indexOf(PAD) >= 0 || compared.contains(c)) {
        return null;
      }
      for (String literal : searched) {
        if (c.contains(literal)) {
          return null;
        }
      }
      int start = 0;
      while (start < c.length() && strippable(c.codePointAt(start))) {
        start += Character.charCount(c.codePointAt(start));
      }
      int end = c.length();
      while (end > start && strippable(c.codePointBefore(end))) {
        end -= Character.charCount(c.codePointBefore(end));
      }
      if (start == end) {
        return null;
      }
      out[i] = c.substring(start, end);
      ends[i] = new String[] {c.substring(0, start), c.substring(end)};
    }
    return out;
  }

  /** What Python's {@code str.strip()} (Jinja's {@code trim}) or the template's strips may remove. */
  private boolean strippable(int cp) {
    return Character.isWhitespace(cp) || Character.isSpaceChar(cp) || cp == 0x85
        || Character.getType(cp) == Character.CONTROL || stripped.indexOf(cp) >= 0;
  }

  /** The template's string literals by how it uses them (see the type's documentation). */
  record Literals(Set<String> searched, Set<String> compared, String stripped) {
    private static final Pattern SEARCH_CALL = Pattern.compile(
        "(?:startswith|endswith|split|rsplit|replace|find|rfind|index|rindex|count|partition|rpartition"
            + "|removeprefix|removesuffix)\\s*\\(\\s*$");
    private static final Pattern STRIP_CALL = Pattern.compile("(?:strip|lstrip|rstrip|trim)\\s*\\(\\s*$");
    private static final Pattern IN_AFTER = Pattern.compile("^\\s*(?:not\\s+)?in\\b");

    static Literals of(List<String> sources) {
      Set<String> searched = new HashSet<>();
      Set<String> compared = new HashSet<>();
      StringBuilder stripped = new StringBuilder();
      for (String source : sources) {
        Matcher m = LITERAL.matcher(source);
        while (m.find()) {
          String value = unescape(m.group(1) != null ? m.group(1) : m.group(2));
          String before = source.substring(Math.max(0, m.start() - 24), m.start());
          String after = source.substring(m.end(), Math.min(source.length(), m.end() + 8));
          if (STRIP_CALL.matcher(before).find()) {
            stripped.append(value);
          } else if (SEARCH_CALL.matcher(before).find() || IN_AFTER.matcher(after).find()) {
            if (!value.isEmpty()) {
              searched.add(value);
            }
          } else {
            compared.add(value);
          }
        }
      }
      return new Literals(Set.copyOf(searched), Set.copyOf(compared), stripped.toString());
    }
  }

  private static String unescape(String raw) {
    StringBuilder out = new StringBuilder(raw.length());
    for (int i = 0; i < raw.length(); i++) {
      char c = raw.charAt(i);
      if (c != '\\' || i + 1 == raw.length()) {
        out.append(c);
        continue;
      }
      char e = raw.charAt(++i);
      out.append(switch (e) {
        case 'n' -> '\n';
        case 't' -> '\t';
        case 'r' -> '\r';
        default -> e;
      });
    }
    return out.toString();
  }
}
