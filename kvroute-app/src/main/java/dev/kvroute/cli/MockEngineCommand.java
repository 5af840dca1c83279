package dev.kvroute.cli;

import dev.kvroute.bench.workload.FleetSpec;
import dev.kvroute.bench.workload.SeedWorkload;
import dev.kvroute.engine.kvevents.BlockHashFormat;
import dev.kvroute.engine.kvevents.KvEventLayout;
import dev.kvroute.engine.kvevents.KvEventsConfig;
import dev.kvroute.engine.model.CostModel;
import dev.kvroute.engine.model.EngineConfig;
import dev.kvroute.engine.model.EngineConfig.SchedulerKind;
import dev.kvroute.engine.server.FaultPlan;
import dev.kvroute.engine.server.HealthFault;
import dev.kvroute.engine.server.MockEngineFleet;
import dev.kvroute.engine.server.MockEngineOptions;
import dev.kvroute.engine.server.MockEngineServer;
import dev.kvroute.engine.server.ModelOptions;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvroute mock-engine}: runs one or more vLLM-compatible mock engines until interrupted. See
 * {@code docs/mock-engine.md}.
 *
 * <p>Example, the explainer's replicas: {@code kvroute mock-engine --port 8001 --replicas 8 --scheduler
 * fcfs-prefill --prefill-tokens-per-second 15000 --prefill-overhead-seconds 0.02
 * --decode-tokens-per-second 30 --kv-capacity-tokens 200000 --time-scale 10}.
 */
@Command(
    name = "mock-engine",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description = "Runs vLLM-compatible mock engines: OpenAI chat/completions (streaming and not), /v1/models,"
        + " /health, /metrics with vLLM's names; a KV block pool with prefix caching and LRU eviction; a"
        + " prefill/decode cost model; fault injection. Times are reported in model seconds (wall x scale).")
public final class MockEngineCommand implements Callable<Integer> {
  /** Option fields of the engine's builders by the flag that sets them, for error messages. */
  private static final Map<String, String> FLAGS = Map.ofEntries(
      Map.entry("port", "--port"),
      Map.entry("modelName", "--model"),
      Map.entry("kvCapacityTokens", "--kv-capacity-tokens"),
      Map.entry("numGpuBlocks", "--num-gpu-blocks"),
      Map.entry("blockSizeTokens", "--block-size"),
      Map.entry("scheduler", "--scheduler"),
      Map.entry("maxNumBatchedTokens", "--max-num-batched-tokens"),
      Map.entry("maxNumSeqs", "--max-num-seqs"),
      Map.entry("maxModelLen", "--max-model-len"),
      Map.entry("prefillTokensPerSecond", "--prefill-tokens-per-second"),
      Map.entry("prefillOverheadSeconds", "--prefill-overhead-seconds"),
      Map.entry("decodeTokensPerSecond", "--decode-tokens-per-second or --itl-seconds"),
      Map.entry("timeScale", "--time-scale"),
      Map.entry("meanOutputTokens", "--mean-output-tokens"),
      Map.entry("tokenizer", "--tokenizer"),
      Map.entry("fault", "--fault"),
      Map.entry("faultProbability", "--fault-probability"),
      Map.entry("health fault", "--health-fault"),
      Map.entry("ioThreads", "--io-threads"),
      Map.entry("maxLoras", "--max-loras"),
      Map.entry("loraLoadSeconds", "--lora-load-seconds"),
      Map.entry("loraModules", "--lora-modules"),
      Map.entry("aliases", "--served-model-name"));

  @Spec CommandSpec spec;

  /** Runs the command standalone (the {@code kvroute} launcher runs it as a subcommand). */
  public static void main(String[] args) {
    int code = new picocli.CommandLine(new MockEngineCommand()).execute(args);
    if (code != 0) {
      System.exit(code);
    }
  }

  @Option(names = "--profile", paramLabel = "NAME",
      description = "Engine settings of a bundled workload, under any flag given explicitly: seed = the explainer's"
          + " engine as kvroute demo and the simulator run it (fcfs-prefill, 15,000 prefill tokens/s + 0.02 s,"
          + " 30 decode tokens/s, block 16, the seed workload's KV capacity as max-model-len too, cached tokens"
          + " in usage).")
  String profile;

  @Option(names = "--host", defaultValue = "0.0.0.0", description = "Address to bind (default: ${DEFAULT-VALUE}).")
  String host;

  @Option(names = "--port", defaultValue = "8000",
      description = "Port of the first replica; replica i listens on port + i; 0 picks free ports (default: ${DEFAULT-VALUE}).")
  int port;

  @Option(names = "--replicas", defaultValue = "1", description = "Engines to run in this process (default: ${DEFAULT-VALUE}).")
  int replicas;

  @Option(names = {"--model", "--served-model-name"}, arity = "1..*", defaultValue = MockEngineOptions.DEFAULT_MODEL,
      description = "Served model name(s), as vLLM's --served-model-name a b: the first is reported in"
          + " responses (default: ${DEFAULT-VALUE}).")
  List<String> model;

  @Option(names = "--enable-lora", description = "Accepted for vLLM compatibility (adapters are always enabled).")
  boolean enableLora;

  @Option(names = "--lora-modules", arity = "1..*", paramLabel = "NAME=PATH",
      description = "LoRA adapters loaded at start, as vLLM's --lora-modules name=path ...")
  List<String> loraModules = new ArrayList<>();

  @Option(names = "--max-loras", defaultValue = "1",
      description = "LoRA adapters active in one batch at once; requests for another adapter wait (default: ${DEFAULT-VALUE}).")
  int maxLoras;

  @Option(names = "--lora-load-seconds", defaultValue = "0.1",
      description = "Model seconds to load an adapter that is not active: a cold adapter delays its first request"
          + " (default: ${DEFAULT-VALUE}).")
  double loraLoadSeconds;

  @Option(names = "--allow-runtime-lora-updating",
      description = "Serve POST /v1/load_lora_adapter and /v1/unload_lora_adapter (vLLM serves them with"
          + " VLLM_ALLOW_RUNTIME_LORA_UPDATING=True, which also turns this on).")
  boolean runtimeLoraUpdating;

  @Option(names = "--kv-capacity-tokens",
      description = "KV cache capacity in tokens (blocks = tokens / block size). Default: 16384 blocks.")
  Long kvCapacityTokens;

  @Option(names = "--num-gpu-blocks", description = "KV cache capacity in blocks (instead of --kv-capacity-tokens).")
  Integer numGpuBlocks;

  @Option(names = "--block-size", defaultValue = "16", description = "KV block size in tokens (default: ${DEFAULT-VALUE}).")
  int blockSize;

  @Option(names = "--scheduler", defaultValue = "continuous",
      description = "fcfs-prefill (one prompt prefills at a time; the explainer's model) or continuous"
          + " (vLLM-like chunked prefill) (default: ${DEFAULT-VALUE}).")
  String scheduler;

  @Option(names = "--max-num-batched-tokens", defaultValue = "8192",
      description = "Token budget per step, continuous scheduler (default: ${DEFAULT-VALUE}).")
  int maxNumBatchedTokens;

  @Option(names = "--max-num-seqs", defaultValue = "256",
      description = "Maximum running requests, continuous scheduler (default: ${DEFAULT-VALUE}).")
  int maxNumSeqs;

  @Option(names = "--max-model-len", description = "Maximum prompt + output tokens. Default: min(32768, KV capacity).")
  Integer maxModelLen;

  @Option(names = "--cost-model", defaultValue = "linear",
      description = "linear (the rates below) or dynamo (Dynamo mocker's fitted H200 polynomials) (default: ${DEFAULT-VALUE}).")
  String costModel;

  @Option(names = "--prefill-tokens-per-second", defaultValue = "15000",
      description = "Linear model: uncached prompt tokens computed per second (default: ${DEFAULT-VALUE}).")
  double prefillTokensPerSecond;

  @Option(names = "--prefill-overhead-seconds", defaultValue = "0.02",
      description = "Linear model: fixed prefill cost per request (default: ${DEFAULT-VALUE}).")
  double prefillOverheadSeconds;

  @Option(names = "--decode-tokens-per-second", defaultValue = "30",
      description = "Linear model: output tokens per second per request, i.e. ITL = 1/rate (default: ${DEFAULT-VALUE}).")
  double decodeTokensPerSecond;

  @Option(names = "--itl-seconds", description = "Linear model: inter-token latency (instead of --decode-tokens-per-second).")
  Double itlSeconds;

  @Option(names = "--time-scale", defaultValue = "1",
      description = "Model seconds per wall second: K > 1 runs K times faster (default: ${DEFAULT-VALUE}).")
  double timeScale;

  @Option(names = "--enable-prompt-tokens-details",
      description = "Report usage.prompt_tokens_details.cached_tokens (as vLLM's flag).")
  boolean promptTokensDetails;

  @Option(names = "--seed", defaultValue = "0", description = "Seed of the generated text (default: ${DEFAULT-VALUE}).")
  long seed;

  @Option(names = "--mean-output-tokens", defaultValue = "128",
      description = "Mean natural reply length without ignore_eos (default: ${DEFAULT-VALUE}).")
  double meanOutputTokens;

  @Option(names = "--tokenizer", defaultValue = "o200k_base", paramLabel = "SPEC",
      description = "Prompt tokens: a jtokkit encoding, or hf:PATH (the model's tokenizer.json and chat template, "
          + "as vLLM tokenizes them) (default: ${DEFAULT-VALUE}).")
  String tokenizer;

  @Option(names = "--fault", defaultValue = "none",
      description = "Fault for requests without an X-Mock-Fault header: none, status:N, close-before-headers,"
          + " close-after:K, stall, stall-after:K, split (comma-separated) (default: ${DEFAULT-VALUE}).")
  String fault;

  @Option(names = "--fault-probability", defaultValue = "1",
      description = "Fraction of header-less requests that get --fault (default: ${DEFAULT-VALUE}).")
  double faultProbability;

  @Option(names = "--health-fault", defaultValue = "ok",
      description = "/health behaviour: ok, fail (503), dead (503 and generation 500), slow:MS (default: ${DEFAULT-VALUE}).")
  String healthFault;

  @Option(names = "--io-threads", defaultValue = "0",
      description = "Event-loop threads shared by the replicas; 0 = min(replicas, CPUs) (default: ${DEFAULT-VALUE}).")
  int ioThreads;

  @Option(names = "--kv-events-config",
      description = "Publish vLLM's KV events: vLLM's JSON, e.g. '{\"enable_kv_cache_events\": true, \"publisher\":"
          + " \"zmq\", \"endpoint\": \"tcp://*:5557\", \"replay_endpoint\": \"tcp://*:5558\", \"topic\":"
          + " \"kv-events\"}' (also buffer_steps, hwm, max_queue_size). Replica i adds i to both ports.")
  String kvEventsConfig;

  @Option(names = "--kv-events-layout", defaultValue = "current",
      description = "KV event fields: current (vLLM >= 0.24: tagged maps) or legacy (vLLM 0.10.2-0.11: tagged"
          + " arrays) (default: ${DEFAULT-VALUE}).")
  String kvEventsLayout;

  @Option(names = "--kv-events-block-hashes", defaultValue = "int",
      description = "Block hashes as int (vLLM's default, VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1) or bytes (=0)"
          + " (default: ${DEFAULT-VALUE}).")
  String kvEventsBlockHashes;

  /**
   * The options these flags describe.
   *
   * @throws ParameterException naming the flag whose value is out of range
   */
  public MockEngineOptions options() {
    try {
      applyProfile();
      CostModel cost = switch (costModel.toLowerCase(Locale.ROOT)) {
        case "linear" -> CostModel.linear(prefillTokensPerSecond, prefillOverheadSeconds,
            itlSeconds != null ? 1.0 / itlSeconds : decodeTokensPerSecond);
        case "dynamo" -> CostModel.dynamo();
        default -> throw new IllegalArgumentException("--cost-model: " + costModel + " (expected: linear or dynamo)");
      };
      if (kvCapacityTokens != null && numGpuBlocks != null) {
        throw new IllegalArgumentException("--kv-capacity-tokens and --num-gpu-blocks: give one of them");
      }
      EngineConfig.Builder engine = EngineConfig.builder()
          .blockSizeTokens(blockSize)
          .scheduler(SchedulerKind.fromCliName(scheduler))
          .maxNumBatchedTokens(maxNumBatchedTokens)
          .maxNumSeqs(maxNumSeqs)
          .cost(cost);
      if (numGpuBlocks != null) {
        engine.numGpuBlocks(numGpuBlocks);
      }
      if (kvCapacityTokens != null) {
        engine.kvCapacityTokens(kvCapacityTokens);
      }
      if (maxModelLen != null) {
        engine.maxModelLen(maxModelLen);
      }
      return MockEngineOptions.builder()
          .host(host)
          .port(port)
          .modelName(model.get(0))
          .models(new ModelOptions(model.subList(1, model.size()), ModelOptions.parseLoraModules(loraModules),
              maxLoras, runtimeLoraUpdating || "true".equalsIgnoreCase(System.getenv("VLLM_ALLOW_RUNTIME_LORA_UPDATING"))
                  || "1".equals(System.getenv("VLLM_ALLOW_RUNTIME_LORA_UPDATING")),
              loraLoadSeconds))
          .engine(engine.build())
          .timeScale(timeScale)
          .enablePromptTokensDetails(promptTokensDetails)
          .seed(seed)
          .meanOutputTokens(meanOutputTokens)
          .tokenizer(tokenizer)
          .fault(FaultPlan.parse(fault))
          .faultProbability(faultProbability)
          .health(HealthFault.parse(healthFault))
          .ioThreads(ioThreads)
          .kvEvents(kvEvents())
          .build();
    } catch (IllegalArgumentException e) {
      throw new ParameterException(spec.commandLine(), withFlagName(e.getMessage()), e);
    }
  }

  private KvEventsConfig kvEvents() {
    KvEventLayout layout = KvEventLayout.fromCliName(kvEventsLayout);
    BlockHashFormat format = BlockHashFormat.fromCliName(kvEventsBlockHashes);
    if (kvEventsConfig == null) {
      return KvEventsConfig.DISABLED;
    }
    return KvEventsConfig.parse(kvEventsConfig, layout, format);
  }

  /**
   * Applies {@link #profile} to every engine setting not given on the command line: the seed workload's
   * engine ({@code SeedWorkloadConfig.defaults()}, its fleet's KV capacity, as {@code kvroute demo} and
   * the simulator configure it).
   */
  private void applyProfile() {
    if (profile == null) {
      return;
    }
    if (!profile.equals("seed")) {
      throw new IllegalArgumentException("--profile: " + profile + " (expected: seed)");
    }
    FleetSpec fleet = SeedWorkload.defaultFleet();
    if (!given("--scheduler")) {
      scheduler = EngineConfig.SchedulerKind.FCFS_PREFILL.cliName();
    }
    if (!given("--block-size")) {
      blockSize = fleet.blockSizeTokens();
    }
    if (!given("--prefill-tokens-per-second")) {
      prefillTokensPerSecond = fleet.prefillTokensPerSecond();
    }
    if (!given("--prefill-overhead-seconds")) {
      prefillOverheadSeconds = fleet.prefillOverheadSeconds();
    }
    if (!given("--decode-tokens-per-second") && !given("--itl-seconds")) {
      decodeTokensPerSecond = fleet.decodeTokensPerSecond();
    }
    if (!given("--kv-capacity-tokens") && !given("--num-gpu-blocks")) {
      kvCapacityTokens = fleet.kvCapacityTokens();
    }
    if (!given("--max-model-len")) {
      maxModelLen = Math.toIntExact(Math.min(Integer.MAX_VALUE,
          kvCapacityTokens != null ? kvCapacityTokens : (long) numGpuBlocks * blockSize));
    }
    promptTokensDetails = true;
  }

  private boolean given(String flag) {
    return spec != null && spec.commandLine().getParseResult() != null
        && spec.commandLine().getParseResult().hasMatchedOption(flag);
  }

  /** {@code "kvCapacityTokens: 0 (...)"} → {@code "--kv-capacity-tokens: 0 (...)"}. */
  static String withFlagName(String message) {
    int colon = message == null ? -1 : message.indexOf(':');
    String flag = colon < 0 ? null : FLAGS.get(message.substring(0, colon));
    return flag == null ? message : flag + message.substring(colon);
  }

  @Override
  public Integer call() throws InterruptedException {
    if (replicas < 1) {
      throw new ParameterException(spec.commandLine(), "--replicas: " + replicas + " (expected: >= 1)");
    }
    if (port > 0 && (long) port + replicas - 1 > 65_535) {
      throw new ParameterException(spec.commandLine(), "--port: " + port + " with --replicas " + replicas
          + " (expected: port + replicas - 1 <= 65535)");
    }
    MockEngineOptions options = options();
    try {
      // loads and warms up the tokenizer before any replica listens
      MockEngineServer.sharedPromptTokenizer(options.tokenizer());
    } catch (IllegalArgumentException e) {
      throw new ParameterException(spec.commandLine(), withFlagName(e.getMessage()), e);
    }
    MockEngineFleet fleet;
    try {
      fleet = MockEngineFleet.start(options, replicas);
    } catch (IllegalStateException e) {
      PrintWriter err = spec.commandLine().getErr();
      err.println("kvroute mock-engine: " + e.getMessage());
      err.flush();
      return CommandLine.ExitCode.SOFTWARE;
    }
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      fleet.close();
      stopped.countDown();
    }, "mock-engine-shutdown"));
    PrintWriter out = spec.commandLine().getOut();
    EngineConfig e = options.engine();
    out.printf("mock-engine: %d replica(s), model %s%s, %s scheduler, %s, KV %d blocks x %d tokens, max-model-len %d, time scale %s%n",
        replicas, options.modelName(),
        options.models().loraModules().isEmpty() ? "" : " + LoRA " + String.join(",", options.models().loraModules().keySet()),
        e.scheduler().cliName(), e.cost(), e.numGpuBlocks(), e.blockSizeTokens(),
        e.maxModelLen(), options.timeScale());
    for (MockEngineServer s : fleet.replicas()) {
      out.println("  " + s.url() + (s.kvEventsEndpoint() == null ? ""
          : "  KV events " + s.kvEventsEndpoint()
              + (s.kvEventsReplayEndpoint() == null ? "" : ", replay " + s.kvEventsReplayEndpoint())));
    }
    out.flush();
    stopped.await();
    return 0;
  }
}
