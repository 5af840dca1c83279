package dev.kvroute.bench.workload;

import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.SingleTokenVocabulary;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.SplittableRandom;
import java.util.random.RandomGenerator;
import java.util.stream.IntStream;

/**
 * Generates the seed scenario from a {@link SeedWorkloadConfig}: {@code replicas × sessionsPerReplica}
 * sessions, each opening with a pasted document and continuing with shorter user messages, text made
 * of single-token words so that N words are N prompt tokens for every component.
 *
 * <p>The same config (including its seed) and word list always give the same sessions. Each session
 * draws from its own generator split from the seed, numbers and text from separate streams.
 *
 * <p>KV capacity: every session is first rendered to its final history with placeholder replies of
 * the requested lengths (replies are exactly {@code max_tokens} long), counted with the
 * {@link PromptCounter}; the engines' capacity is {@code cacheSessions} times the mean of (last
 * prompt + last reply) over sessions, rounded up to whole blocks.
 *
 * <p>Thread-safe (stateless). {@code counter} is called from several threads at once.
 */
public final class SeedWorkload {
  /** The name reports use for this workload. */
  public static final String NAME = "seed";

  private SeedWorkload() {}

  /**
   * Generates the sessions and sizes the fleet.
   *
   * @param words single-token words; the user text is drawn uniformly from them
   * @param counter counts prompt tokens as {@code PromptTokenizer} does
   */
  public static Workload generate(
      SeedWorkloadConfig config, SingleTokenVocabulary words, PromptCounter counter) {
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(words, "words");
    Objects.requireNonNull(counter, "counter");
    SplittableRandom root = new SplittableRandom(config.seed());
    SplittableRandom[] numbers = new SplittableRandom[config.sessions()];
    SplittableRandom[] text = new SplittableRandom[config.sessions()];
    for (int i = 0; i < config.sessions(); i++) {
      numbers[i] = root.split();
      text[i] = root.split();
    }
    // Sessions are independent (each has its own generators), so they are built in parallel; the
    // result does not depend on the order.
    Session[] built = new Session[config.sessions()];
    double[] finalHistory = new double[config.sessions()];
    IntStream.range(0, config.sessions())
        .parallel()
        .forEach(
            i -> {
              built[i] = session(config, i, numbers[i], text[i], words);
              finalHistory[i] = finalHistoryTokens(built[i], text[i], words, counter);
            });
    List<Session> sessions = List.of(built);
    double finalHistorySum = 0;
    for (double h : finalHistory) {
      finalHistorySum += h;
    }
    double meanFinal = finalHistorySum / sessions.size();
    long capacity = (long) Math.ceil(config.cacheSessions() * meanFinal);
    FleetSpec fleet =
        new FleetSpec(
                config.replicas(),
                config.blockSizeTokens(),
                config.blockSizeTokens(),
                config.prefillTokensPerSecond(),
                config.prefillOverheadSeconds(),
                config.decodeTokensPerSecond())
            .withKvCapacityTokens(capacity);
    return new Workload(NAME, sessions, fleet, meanFinal);
  }

  /**
   * KV capacity of each engine of the default seed workload ({@link SeedWorkloadConfig#defaults()}): 10
   * x its mean final session history of 17,746 tokens, rounded up to whole blocks. Kept as a constant so
   * that an engine started with {@code --profile seed} needs no workload generation; {@code
   * SeedWorkloadTest} checks it against the generated workload.
   */
  public static final long DEFAULT_KV_CAPACITY_TOKENS = 177_472;

  /** The fleet of the default seed workload, without generating it: its engines' settings and capacity. */
  public static FleetSpec defaultFleet() {
    SeedWorkloadConfig c = SeedWorkloadConfig.defaults();
    return new FleetSpec(
            c.replicas(), c.blockSizeTokens(), c.blockSizeTokens(), c.prefillTokensPerSecond(),
            c.prefillOverheadSeconds(), c.decodeTokensPerSecond())
        .withKvCapacityTokens(DEFAULT_KV_CAPACITY_TOKENS);
  }

  /**
   * Generates the sessions with the single-token vocabulary of {@code tokenizer}'s tokenizer and counts
   * prompt tokens with {@code tokenizer}.
   */
  public static Workload generate(SeedWorkloadConfig config, PromptTokenizer tokenizer) {
    return generate(
        config, SingleTokenVocabulary.of(tokenizer.tokenizer()), ChatRequests.counter(tokenizer));
  }

  private static Session session(
      SeedWorkloadConfig c, int index, RandomGenerator numbers, RandomGenerator text, SingleTokenVocabulary words) {
    double start = numbers.nextDouble() * c.startWindowSeconds();
    long seed = numbers.nextLong() & 0xFFFF_FFFFL;
    int turnCount =
        Math.max(
            c.turnsMin(),
            Math.min(c.turnsMax(), Draws.count(Draws.lognormalWithMedian(numbers, c.turnsMedian(), c.turnsSigma()))));
    List<Turn> turns = new ArrayList<>(turnCount);
    for (int t = 0; t < turnCount; t++) {
      int userTokens =
          t == 0
              ? Draws.count(Draws.lognormalWithMean(numbers, c.firstMessageMeanTokens(), c.firstMessageSigma()))
              : Draws.count(Draws.lognormalWithMean(numbers, c.userMessageMeanTokens(), c.userMessageSigma()));
      int replyTokens = Draws.count(Draws.lognormalWithMean(numbers, c.replyMeanTokens(), c.replySigma()));
      double think = Draws.exponential(numbers, c.thinkMeanSeconds());
      turns.add(new Turn(words(text, words, userTokens), userTokens, replyTokens, think));
    }
    return new Session(index, String.format("session-%04d", index), start, seed, turns);
  }

  /** Tokens an engine holds when {@code session} ends: its last prompt plus its last reply. */
  private static int finalHistoryTokens(
      Session session, RandomGenerator text, SingleTokenVocabulary words, PromptCounter counter) {
    Conversation conversation = new Conversation(session);
    List<ChatMessage> last = null;
    int lastReply = 0;
    while (!conversation.done()) {
      last = conversation.nextRequest();
      lastReply = conversation.currentTurn().replyTokens();
      conversation.reply(words(text, words, lastReply));
    }
    return counter.promptTokens(last) + lastReply;
  }

  private static String words(RandomGenerator random, SingleTokenVocabulary words, int n) {
    return words.randomText(n, random);
  }
}
