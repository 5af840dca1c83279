package dev.kvroute.bench.jmh;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * A deterministic, endless stream of multi-turn chat prompts in tokens, for index benchmarks: a few
 * long system prompts shared by many sessions, {@code sessions} interleaved conversations whose
 * histories grow by a user message and an assistant reply per turn, and sessions that end and are
 * replaced once their history passes {@code maxHistoryTokens}.
 *
 * <p>Sizes (tokens): system prompts 1,000-3,000; user messages 50-500; assistant replies 100-1,000;
 * so a prompt averages about half of {@code maxHistoryTokens} and shares its first pages with every
 * other session on the same system prompt. Token ids are uniform in [0, 200,000).
 *
 * <p>Not thread-safe.
 */
final class ChatHistoryWorkload {
  private static final int VOCABULARY = 200_000;
  private static final int[] GENERATION_PROMPT = {200_264, 173_781, 198}; // "<|im_start|>assistant\n"

  private final SplittableRandom random;
  private final int maxHistoryTokens;
  private final int[][] systemPrompts;
  private final int[][] histories;
  private final int[] lengths;
  private final int[] sessionIds;
  private int nextSessionId;
  private int lastSession = -1;
  private int lastPromptTokens;

  ChatHistoryWorkload(long seed, int sessions, int maxHistoryTokens) {
    this.random = new SplittableRandom(seed);
    this.maxHistoryTokens = maxHistoryTokens;
    this.systemPrompts = new int[4][];
    for (int i = 0; i < systemPrompts.length; i++) {
      systemPrompts[i] = randomTokens(1_000 + random.nextInt(2_001));
    }
    this.histories = new int[sessions][];
    this.lengths = new int[sessions];
    this.sessionIds = new int[sessions];
    for (int s = 0; s < sessions; s++) {
      startSession(s);
      // Stagger the sessions so the stream starts in steady state rather than all at turn one.
      int turns = random.nextInt(12);
      for (int t = 0; t < turns && lengths[s] < maxHistoryTokens / 2; t++) {
        append(s, randomTokens(50 + random.nextInt(451)));
        append(s, randomTokens(100 + random.nextInt(901)));
      }
    }
  }

  /**
   * The next request's prompt: a random session's history, a new user message and the generation
   * prompt. Call {@link #replied()} after routing it to append the assistant's reply to that history.
   */
  int[] nextPrompt() {
    int s = random.nextInt(histories.length);
    if (lengths[s] > maxHistoryTokens) {
      startSession(s);
    }
    append(s, randomTokens(50 + random.nextInt(451)));
    lastSession = s;
    int[] prompt = Arrays.copyOf(histories[s], lengths[s] + GENERATION_PROMPT.length);
    System.arraycopy(GENERATION_PROMPT, 0, prompt, lengths[s], GENERATION_PROMPT.length);
    lastPromptTokens = prompt.length;
    return prompt;
  }

  /** Appends the generation prompt and an assistant reply to the last prompt's session. */
  void replied() {
    append(lastSession, GENERATION_PROMPT);
    append(lastSession, randomTokens(100 + random.nextInt(901)));
  }

  /** Length of the last prompt returned by {@link #nextPrompt()}. */
  int lastPromptTokens() {
    return lastPromptTokens;
  }

  /** A stable id of the last prompt's conversation (changes when its session is replaced). */
  int lastSessionId() {
    return sessionIds[lastSession];
  }

  private void startSession(int s) {
    int[] system = systemPrompts[random.nextInt(systemPrompts.length)];
    histories[s] = Arrays.copyOf(system, Math.max(4096, system.length * 2));
    lengths[s] = system.length;
    sessionIds[s] = nextSessionId++;
  }

  private void append(int s, int[] tokens) {
    if (lengths[s] + tokens.length > histories[s].length) {
      histories[s] = Arrays.copyOf(histories[s], Math.max(histories[s].length * 2,
          lengths[s] + tokens.length));
    }
    System.arraycopy(tokens, 0, histories[s], lengths[s], tokens.length);
    lengths[s] += tokens.length;
  }

  private int[] randomTokens(int n) {
    int[] tokens = new int[n];
    for (int i = 0; i < n; i++) {
      tokens[i] = random.nextInt(VOCABULARY);
    }
    return tokens;
  }
}
