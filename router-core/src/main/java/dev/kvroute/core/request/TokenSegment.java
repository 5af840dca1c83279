package dev.kvroute.core.request;

import java.util.Arrays;
import java.util.Objects;

/** A {@link PromptSegment} of client-given token ids. */
final class TokenSegment implements PromptSegment {
  private final int[] tokenIds;

  TokenSegment(int[] tokenIds) {
    this.tokenIds = Objects.requireNonNull(tokenIds, "tokenIds");
  }

  @Override
  public String role() {
    return null;
  }

  @Override
  public String text() {
    return null;
  }

  @Override
  public TextHash textHash() {
    return null;
  }

  @Override
  public int[] tokenIds() {
    return tokenIds;
  }

  @Override
  public boolean isTokens() {
    return true;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof TokenSegment t && Arrays.equals(tokenIds, t.tokenIds);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(tokenIds);
  }

  @Override
  public String toString() {
    return "PromptSegment[" + tokenIds.length + " token ids]";
  }
}
