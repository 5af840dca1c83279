package dev.kvroute.core.tokenize;

import dev.kvroute.core.index.PageHashes;
import dev.kvroute.core.index.SegmentedTokens;
import java.util.Objects;

/**
 * What routing knows of a prompt before its new text is encoded ({@link PromptTokenizer#knownLead}):
 * the tokens of its leading messages that an earlier prompt left ({@code tokens}, none when no kept
 * prompt leads it), the page hashes that prompt left for them ({@code pageHashes}, valid for all of
 * {@code tokens}), and the whole prompt's estimated length in tokens ({@code estimatedTokens}: the
 * known tokens, the cached pieces' tokens, and a quarter token per code point of the text still to
 * encode, OpenAI's rule of thumb of about four characters per token of English). The known tokens are
 * exactly the first tokens {@link PromptTokenizer#tokenizePrefixed} gives the prompt, so all the
 * prefix index can match of it lies among them, unless its new text repeats a prompt the caches have
 * let go of.
 *
 * <p>Immutable.
 */
public record KnownLead(SegmentedTokens tokens, PageHashes pageHashes, int estimatedTokens) {
  /** Checks the parts. */
  public KnownLead {
    Objects.requireNonNull(tokens, "tokens");
    Objects.requireNonNull(pageHashes, "pageHashes");
    if (estimatedTokens < tokens.length()) {
      throw new IllegalArgumentException("estimatedTokens: " + estimatedTokens + " (expected: at least the "
          + tokens.length() + " known tokens)");
    }
  }
}
