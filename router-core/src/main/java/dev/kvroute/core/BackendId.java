package dev.kvroute.core;

import java.util.Objects;

/**
 * The stable name of one backend (an inference replica), e.g. {@code "http://10.0.0.5:8000"} or
 * {@code "engine-3"}. Used as a metric tag, so the set of ids is bounded by configuration.
 *
 * <p>Immutable and thread-safe.
 *
 * @param name non-blank identifier
 */
public record BackendId(String name) implements Comparable<BackendId> {
  public BackendId {
    Objects.requireNonNull(name, "name");
    if (name.isBlank()) {
      throw new IllegalArgumentException("name: blank (expected: a non-blank backend id)");
    }
  }

  public static BackendId of(String name) {
    return new BackendId(name);
  }

  @Override
  public int compareTo(BackendId o) {
    return name.compareTo(o.name);
  }

  @Override
  public String toString() {
    return name;
  }
}
