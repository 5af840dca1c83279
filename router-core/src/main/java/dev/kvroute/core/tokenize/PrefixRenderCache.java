package dev.kvroute.core.tokenize;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.kvroute.core.request.InvalidRequestException;
import dev.kvroute.core.request.PromptSegment;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.core.request.TextHash;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The tokens of a chat request whose earlier messages were seen before, at a cost that follows its
 * new messages rather than its whole history: a cache of rendered-and-tokenized conversation
 * prefixes, keyed by the exact bytes of the messages, so that only a short window of the
 * conversation goes through the (slow) chat template and the tokenizer.
 *
 * <h2>What is cached</h2>
 *
 * For a request with messages {@code m_0 .. m_{n-1}}, let the <em>window</em> start {@code w} be
 * the last message before the final one whose role is {@code user} (moved one earlier when needed
 * so that {@code w - 1} is even: the messages dropped below keep their parity). An entry holds the
 * tokens of {@code m_0 .. m_{w-1}} <em>as they render inside a longer conversation</em>: the full
 * rendering minus the rendering of the window. A hit renders only the reduced conversation
 * {@code [m_0] ++ m_w .. m_{n-1}}, takes the text after the rendering of {@code [m_0]} alone
 * ({@code add_generation_prompt=false}), encodes that delta (chunk-cached) and appends it to the
 * entry's tokens. The reduced conversation is rendered by substitution into a cached skeleton when
 * its contents allow ({@link ContentSkeletons}: the template then runs once per conversation shape,
 * not per request); the checks below hold it to the full rendering as well.
 *
 * <h2>When that equals a full rendering</h2>
 *
 * It does when the template renders each message from the window on the same way with or without
 * the dropped messages between {@code m_0} and {@code m_w}, and renders the messages before the
 * window the same way whatever follows them from the last user message on. ChatML-style templates
 * do (Qwen3's assistant turns after the last user query keep their reasoning: they are always in the
 * window, as the window starts at a user message; Llama 3.1's system block is {@code m_0}), and so
 * do templates that check role alternation (parity is kept). A template may still break it (say,
 * one that numbers the turns), so the cache checks itself:
 *
 * <ul>
 *   <li>an entry is made only from a request whose full rendering was computed and ends with the
 *       reduced rendering's delta, cut where the tokenizer keeps tokens
 *       ({@link HfTokenizer#cutBefore}), or from a hit whose own delta ends with the next window's;
 *   <li>the first {@value #VERIFY_FIRST} hits and one in {@value #VERIFY_EVERY} after them are also
 *       rendered in full and compared token for token; a difference turns the cache off for good,
 *       logs once and answers the full rendering (see {@link #mismatches()}).
 * </ul>
 *
 * Requests with {@code continue_final_message}, with content given other than as a plain string in a
 * message whose bytes were not kept, or without message positions from the parser, are rendered in
 * full. The key chains the request's template inputs other than the messages ({@code tools}, {@code
 * documents}, {@code chat_template_kwargs}, {@code add_generation_prompt}) and each message's bytes
 * (its string content by its {@link TextHash}), so two different prefixes share an entry only with
 * the collision probability given there.
 *
 * <p>Bounded by estimated bytes ({@code 4 × tokens + 256} per entry, counting an entry's whole
 * prefix even where it shares arrays with the entry it extends). Thread-safe.
 */
final class PrefixRenderCache {
  static final int VERIFY_FIRST = 8;
  static final int VERIFY_EVERY = 64;
  private static final int ENTRY_OVERHEAD_BYTES = 256;
  /** Entries extending others deeper than this are flattened into one array. */
  private static final int MAX_DEPTH = 16;
  /** How many earlier user messages a request looks back for an entry. */
  private static final int MAX_WALK_BACK = 4;
  private static final System.Logger LOG = System.getLogger(PrefixRenderCache.class.getName());

  /** The full rendering of a request, as {@link TemplatePromptTokenizer} computes it. */
  interface FullRender {
    /** The request's template input, prompt text and tokens. */
    Rendered render(RequestView view);
  }

  /** A full rendering: the template input, its text, its tokens. */
  record Rendered(ChatInput input, String text, int[] tokens) {}

  /** A prefix's tokens: {@code parent}'s, then {@code own}; {@code tail} ends its text. */
  private record Prefix(Prefix parent, int[] own, int length, String tail, int depth) {
    int[] copyInto(int[] out) {
      int at = length;
      for (Prefix p = this; p != null; p = p.parent) {
        at -= p.own.length;
        System.arraycopy(p.own, 0, out, at, p.own.length);
      }
      return out;
    }
  }

  private final HfTokenizer tokenizer;
  private final ChatTemplate template;
  private final java.util.function.Function<String, int[]> textTokens;
  private final FullRender full;
  private final Cache<TextHash, Prefix> prefixes;
  private final Cache<TextHash, String> firstMessages;
  /** The window's rendering without the template where its contents allow (see there). */
  private final ContentSkeletons skeletons;
  private final AtomicLong hits = new AtomicLong();
  private final AtomicLong mismatches = new AtomicLong();
  private volatile boolean off;

  /**
   * @param textTokens the tokens of a rendered text (chunk-cached; the array may be shared)
   * @param full the full rendering of a request
   */
  PrefixRenderCache(HfTokenizer tokenizer, ChatTemplate template,
      java.util.function.Function<String, int[]> textTokens, FullRender full, long maxBytes) {
    this.tokenizer = tokenizer;
    this.template = template;
    this.textTokens = textTokens;
    this.full = full;
    this.prefixes = Caffeine.newBuilder()
        .maximumWeight(maxBytes)
        .weigher((TextHash k, Prefix p) ->
            (int) Math.min(Integer.MAX_VALUE, 4L * p.length + ENTRY_OVERHEAD_BYTES + 2L * p.tail.length()))
        .executor(Runnable::run)
        .build();
    this.skeletons = new ContentSkeletons(template, Math.max(0, maxBytes / 16));
    this.firstMessages = Caffeine.newBuilder()
        .maximumWeight(Math.max(0, maxBytes / 16))
        .weigher((TextHash k, String s) -> (int) Math.min(Integer.MAX_VALUE, 2L * s.length() + 64))
        .executor(Runnable::run)
        .build();
  }

  /** Requests answered from an entry so far. */
  long hits() {
    return hits.get();
  }

  /** Checked hits that differed from the full rendering (the cache is off after the first). */
  long mismatches() {
    return mismatches.get();
  }

  /** Window renderings answered by substitution into a cached skeleton ({@link ContentSkeletons}). */
  long substitutedRenders() {
    return skeletons.substituted();
  }

  /** Entries now. */
  long size() {
    prefixes.cleanUp();
    return prefixes.estimatedSize();
  }

  /**
   * The prompt tokens of a chat request with a body.
   *
   * @throws ChatTemplateException as the full rendering does
   */
  int[] tokenize(RequestView view) {
    RequestView.Body body = view.body();
    int[] spans = body.messageSpans();
    List<PromptSegment> segments = view.segments();
    if (off || spans == null || spans.length != 4 * segments.size() || segments.size() < 2) {
      return full.render(view).tokens();
    }
    int n = segments.size();
    int w = windowStart(segments, n - 1);
    int next = windowStart(segments, n);
    if (w >= 1) {
      ChatInput reduced = reducedInput(body, spans, n, w);
      if (reduced != null && !reduced.continueFinalMessage()) {
        TextHash[] keys = keys(body.bytes(), spans, segments, context(reduced), Math.max(w, next));
        // The window's own entry, else one of a few earlier user messages' (a new turn's first request).
        int start = w;
        Prefix entry = prefixes.getIfPresent(keys[w]);
        for (int step = 0; entry == null && step < MAX_WALK_BACK; step++) {
          start = windowStart(segments, start);
          if (start < 1) {
            break;
          }
          entry = prefixes.getIfPresent(keys[start]);
        }
        if (entry != null) {
          ChatInput window = start == w ? reduced : reducedInput(body, spans, n, start);
          int[] tokens = window == null ? null : fromEntry(entry, window, keys, start, w);
          if (tokens != null) {
            long hit = hits.incrementAndGet();
            if (hit <= VERIFY_FIRST || hit % VERIFY_EVERY == 0) {
              Rendered checked = full.render(view);
              if (!Arrays.equals(tokens, checked.tokens())) {
                mismatch();
                return checked.tokens();
              }
            }
            return tokens;
          }
        }
      }
    }
    Rendered rendered = full.render(view);
    if (!rendered.input().continueFinalMessage()) {
      TextHash[] keys = null;
      for (int start : new int[] {w, next}) {
        if (start >= 1 && start < n) {
          if (keys == null) {
            keys = keys(body.bytes(), spans, segments, context(rendered.input()), Math.max(w, next));
          }
          remember(keys, start, rendered);
        }
      }
    }
    return rendered.tokens();
  }

  private void mismatch() {
    if (mismatches.getAndIncrement() == 0) {
      LOG.log(System.Logger.Level.WARNING, "chat template " + tokenizer.name() + ": a cached prefix "
          + "gave other tokens than the full rendering; prefix caching is off for this tokenizer "
          + "(every request renders the whole conversation)");
    }
    off = true;
  }

  /**
   * The tokens of a request from the entry at {@code start} ({@code reduced} holds {@code [m_0] ++
   * m_start ..}); when {@code start} is before the request's own window {@code w}, the entry at
   * {@code w} is made too. Null when a check fails.
   */
  private int[] fromEntry(Prefix entry, ChatInput reduced, TextHash[] keys, int start, int w) {
    String red;
    String first;
    try {
      red = skeletons.render(reduced, keys[0]);
      first = firstMessage(keys[1], reduced);
    } catch (ChatTemplateException e) {
      return null; // the full rendering decides
    }
    if (!red.startsWith(first) || red.length() == first.length()) {
      return null;
    }
    String delta = red.substring(first.length());
    if (!tokenizer.cutBefore(entry.tail + delta, entry.tail.length())) {
      return null;
    }
    int[] deltaTokens = textTokens.apply(delta);
    int[] out = entry.copyInto(new int[entry.length + deltaTokens.length]);
    System.arraycopy(deltaTokens, 0, out, entry.length, deltaTokens.length);
    if (w > start && prefixes.getIfPresent(keys[w]) == null) {
      List<Map<String, Object>> msgs = new ArrayList<>();
      msgs.add(reduced.messages().get(0));
      msgs.addAll(reduced.messages().subList(1 + w - start, reduced.messages().size()));
      String wDelta = windowDelta(reduced, msgs, first);
      if (wDelta != null && delta.endsWith(wDelta)) {
        int cut = delta.length() - wDelta.length();
        String joined = entry.tail + delta;
        if (tokenizer.cutBefore(joined, entry.tail.length() + cut)) {
          int own = deltaTokens.length - textTokens.apply(wDelta).length;
          if (own >= 0) {
            String tail = tail(joined.substring(0, entry.tail.length() + cut));
            Prefix p = entry.depth >= MAX_DEPTH
                ? new Prefix(null, Arrays.copyOf(out, entry.length + own), entry.length + own, tail, 0)
                : new Prefix(entry, Arrays.copyOfRange(deltaTokens, 0, own), entry.length + own, tail,
                    entry.depth + 1);
            prefixes.put(keys[w], p);
          }
        }
      }
    }
    return out;
  }

  /** Makes the entry for the window starting at {@code start} from a full rendering. */
  private void remember(TextHash[] keys, int start, Rendered rendered) {
    if (prefixes.getIfPresent(keys[start]) != null) {
      return;
    }
    ChatInput in = rendered.input();
    List<Map<String, Object>> msgs = new ArrayList<>();
    msgs.add(in.messages().get(0));
    msgs.addAll(in.messages().subList(start, in.messages().size()));
    String first;
    String delta;
    try {
      first = firstMessage(keys[1], in);
      delta = windowDelta(in, msgs, first);
    } catch (ChatTemplateException e) {
      return;
    }
    String text = rendered.text();
    if (delta == null || !text.endsWith(delta)) {
      return;
    }
    int cut = text.length() - delta.length();
    if (!tokenizer.cutBefore(text, cut)) {
      return;
    }
    int own = rendered.tokens().length - textTokens.apply(delta).length;
    if (own <= 0) {
      return;
    }
    prefixes.put(keys[start],
        new Prefix(null, Arrays.copyOf(rendered.tokens(), own), own, tail(text.substring(0, cut)), 0));
  }

  /** The text after {@code first} of the conversation {@code msgs}, or null if it does not start so. */
  private String windowDelta(ChatInput like, List<Map<String, Object>> msgs, String first) {
    String red;
    try {
      red = template.render(new ChatInput(msgs, like.tools(), like.documents(),
          like.addGenerationPrompt(), false, like.kwargs()));
    } catch (ChatTemplateException e) {
      return null;
    }
    return red.startsWith(first) && red.length() > first.length() ? red.substring(first.length()) : null;
  }

  /** The rendering of the first message alone, without the generation prompt (cached). */
  private String firstMessage(TextHash key, ChatInput like) {
    return firstMessages.get(key, k -> template.render(new ChatInput(List.of(like.messages().get(0)),
        like.tools(), like.documents(), false, false, like.kwargs())));
  }

  private String tail(String text) {
    int keep = Math.max(1, tokenizer.maxAddedChars());
    return text.length() <= keep ? text : text.substring(text.length() - keep);
  }

  /**
   * The last {@code user} message in {@code [1, limit)}, one earlier if that keeps {@code w - 1}
   * even; {@code -1} if there is none. A request's window starts at {@code windowStart(n - 1)} (never
   * its final message); the entry its successor will look for is at {@code windowStart(n)}.
   */
  static int windowStart(List<PromptSegment> segments, int limit) {
    for (int i = Math.min(limit, segments.size()) - 1; i >= 1; i--) {
      if ("user".equals(segments.get(i).role())) {
        return (i - 1) % 2 == 0 ? i : i - 1;
      }
    }
    return -1;
  }

  /**
   * The template input of {@code [m_0] ++ m_w .. m_{n-1}}, read from those messages' bytes and the
   * body's other fields, as {@link ChatInput#fromBody} reads a whole body; null if it cannot be read.
   */
  private ChatInput reducedInput(RequestView.Body body, int[] spans, int n, int w) {
    byte[] b = body.bytes();
    int firstStart = spans[0];
    int lastEnd = spans[4 * (n - 1) + 1];
    ByteArrayOutputStream out = new ByteArrayOutputStream(256);
    out.write(b, body.offset(), firstStart - body.offset());
    out.write(b, firstStart, spans[1] - firstStart);
    for (int i = w; i < n; i++) {
      out.write(',');
      out.write(b, spans[4 * i], spans[4 * i + 1] - spans[4 * i]);
    }
    out.write(b, lastEnd, body.offset() + body.length() - lastEnd);
    byte[] small = out.toByteArray();
    try {
      return ChatInput.fromBody(small, 0, small.length, template.stringContent());
    } catch (InvalidRequestException | RuntimeException e) {
      return null;
    }
  }

  /** What besides the messages the template sees, as one hash. */
  private static TextHash context(ChatInput in) {
    return TextHash.of(PyJson.dumps(
        Arrays.asList(in.tools(), in.documents(), in.kwargs(), in.addGenerationPrompt()), -1));
  }

  /**
   * {@code keys[i]}: the hash of the context and the first {@code i} messages' bytes, for {@code i}
   * up to {@code upTo}.
   */
  private static TextHash[] keys(byte[] b, int[] spans, List<PromptSegment> segments, TextHash context,
      int upTo) {
    TextHash[] keys = new TextHash[upTo + 1];
    keys[0] = context;
    ByteBuffer buf = ByteBuffer.allocate(64);
    for (int i = 0; i < upTo; i++) {
      int start = spans[4 * i];
      int end = spans[4 * i + 1];
      int cs = spans[4 * i + 2];
      TextHash before;
      TextHash content;
      TextHash after;
      PromptSegment s = segments.get(i);
      if (cs >= 0 && s.textHash() != null) {
        int ce = spans[4 * i + 3];
        before = TextHash.ofUtf8(b, start, cs - start);
        content = s.textHash();
        after = TextHash.ofUtf8(b, ce, end - ce);
      } else {
        before = TextHash.ofUtf8(b, start, end - start);
        content = new TextHash(-1, -1);
        after = new TextHash(-1, -1);
      }
      buf.clear();
      buf.putLong(keys[i].high()).putLong(keys[i].low())
          .putLong(before.high()).putLong(before.low())
          .putLong(content.high()).putLong(content.low())
          .putLong(after.high()).putLong(after.low());
      keys[i + 1] = TextHash.ofUtf8(buf.array(), 0, 64);
    }
    return keys;
  }
}
