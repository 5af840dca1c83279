package dev.kvroute.core.tokenize;

import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.InvalidRequestException;
import dev.kvroute.core.request.PromptSegment;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.core.request.TextHash;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * {@link PromptTokenizer} with a model's own tokenizer and chat template: a chat request is rendered
 * by its {@link ChatTemplate} from the request body (or, for a view built from segments, from its
 * role and text pairs), and the text is encoded with {@code add_special_tokens=False}, as vLLM does.
 *
 * <p>What is cached. A chat request whose earlier messages were seen before is answered by the
 * {@link PrefixRenderCache}: the tokens of its history up to the last user message before its final
 * one come from that cache (keyed by the messages' exact bytes), and only a short window (the first
 * message, then the messages from that user message on) is rendered and encoded; its documentation
 * says when that equals a full rendering and how the cache checks itself. Otherwise the whole
 * conversation is rendered (the template decides what each message looks like, possibly from
 * messages after it or from its position, e.g. Qwen3 drops the reasoning of assistant turns before
 * the last user query). Either way the rendered text is cut right after special tokens
 * ({@link HfTokenizer#splitAfterSpecialTokens}) into chunks of at least {@value #MIN_CHUNK_CHARS}
 * characters (greedily from the start), and each chunk's tokens are kept in a byte-bounded cache
 * keyed by the {@link TextHash} of its text. The tokenizer encodes the pieces between special tokens
 * independently, so the concatenated chunk tokens equal the tokens of the whole text. Tokenizers
 * whose pieces depend on their position are never cut (one chunk per prompt, no prefix cache).
 *
 * <p>Completions and SGLang prompts: each text segment is one cached piece, encoded with {@code
 * add_special_tokens=True} as vLLM's {@code /v1/completions} and SGLang's {@code /generate} do by
 * default (Llama 3 gets its {@code <|begin_of_text|>}); token ids are used as given.
 *
 * <p>Thread-safe.
 */
final class TemplatePromptTokenizer implements PromptTokenizer {
  /** Smallest chunk worth a cache entry (shorter runs between special tokens are merged). */
  static final int MIN_CHUNK_CHARS = 256;

  private final HfTokenizer tokenizer;
  private final ChatTemplate template;
  /** Chat requests whose earlier messages were seen before: only a window is rendered. */
  private final PrefixRenderCache prefixes;
  private final PieceCache cache;
  /** Completion and SGLang text prompts, encoded with special tokens (another key space). */
  private final PieceCache prompts;

  TemplatePromptTokenizer(HfTokenizer tokenizer, ChatTemplate template, long maxCacheBytes) {
    this.tokenizer = Objects.requireNonNull(tokenizer, "tokenizer");
    this.template = Objects.requireNonNull(template, "template");
    this.cache = new PieceCache(maxCacheBytes);
    this.prompts = new PieceCache(maxCacheBytes / 4);
    this.prefixes = new PrefixRenderCache(tokenizer, template, this::tokenizeText, this::renderFully,
        maxCacheBytes);
  }

  @Override
  public int[] tokenize(RequestView view) {
    if (view.endpoint() != Endpoint.CHAT_COMPLETIONS || view.body() == null) {
      return tokenize(view.endpoint(), view.segments());
    }
    return prefixes.tokenize(view);
  }

  /** The whole conversation of a chat request body rendered and tokenized (no prefix cache). */
  PrefixRenderCache.Rendered renderFully(RequestView view) {
    ChatInput input;
    try {
      RequestView.Body b = view.body();
      input = ChatInput.fromBody(b.bytes(), b.offset(), b.length(), template.stringContent());
    } catch (InvalidRequestException e) {
      throw new ChatTemplateException(e.getMessage(), e);
    }
    String text = template.render(input);
    return new PrefixRenderCache.Rendered(input, text, tokenizeText(text));
  }

  /** The prefix cache of chat requests (for tests). */
  PrefixRenderCache prefixes() {
    return prefixes;
  }

  @Override
  public int[] tokenize(Endpoint endpoint, List<PromptSegment> segments) {
    if (endpoint == Endpoint.CHAT_COMPLETIONS) {
      return tokenizeText(template.render(ChatInput.fromSegments(segments)));
    }
    List<int[]> pieces = new ArrayList<>(segments.size());
    for (PromptSegment s : segments) {
      pieces.add(s.isTokens() ? s.tokenIds()
          : prompts.get(s.textHash(), k -> tokenizer.encodeWithSpecialTokens(s.text())));
    }
    return concat(pieces);
  }

  /** The tokens of a rendered prompt, chunk by chunk through the cache. */
  int[] tokenizeText(String text) {
    int[] cuts = tokenizer.splitAfterSpecialTokens(text);
    List<int[]> pieces = new ArrayList<>(cuts.length / 2 + 2);
    int start = 0;
    for (int cut : cuts) {
      if (cut - start >= MIN_CHUNK_CHARS) {
        pieces.add(chunk(text.substring(start, cut)));
        start = cut;
      }
    }
    if (start < text.length()) {
      pieces.add(chunk(text.substring(start)));
    }
    return concat(pieces);
  }

  private int[] chunk(String text) {
    return cache.get(TextHash.of(text), k -> tokenizer.encode(text));
  }

  private static int[] concat(List<int[]> pieces) {
    long total = 0;
    for (int[] p : pieces) {
      total += p.length;
    }
    if (total > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException("prompt: " + total + " tokens (expected: fewer than 2^31)");
    }
    if (pieces.size() == 1) {
      return pieces.get(0).clone();
    }
    int[] out = new int[(int) total];
    int at = 0;
    for (int[] p : pieces) {
      System.arraycopy(p, 0, out, at, p.length);
      at += p.length;
    }
    return out;
  }

  /** The prompt text of a chat request body, as the template renders it (for tests and tools). */
  String render(ChatInput input) {
    return template.render(input);
  }

  ChatTemplate template() {
    return template;
  }

  @Override
  public int[] encode(String piece) {
    return cache.encode(tokenizer, piece);
  }

  @Override
  public Tokenizer tokenizer() {
    return tokenizer;
  }

  @Override
  public long cachedPieces() {
    return cache.size();
  }
}
