package dev.kvroute.proxy.config;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonDeserializer;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.JsonSerializer;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.exc.InvalidFormatException;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import com.fasterxml.jackson.databind.exc.ValueInstantiationException;
import com.fasterxml.jackson.databind.module.SimpleModule;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLGenerator;
import dev.kvroute.core.policy.LoadMeasure;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * Reads a {@link ProxyConfig}: the defaults, then the YAML file (if any) on top, then overrides
 * keyed by YAML path (from command-line flags) on top of that; the merged tree is bound to the records,
 * whose constructors validate it. Keys in the file replace defaults key by key; lists replace lists.
 * One default depends on another key: when neither the file nor an override gives {@code
 * routing.pageSizeTokens} and {@code index.mode} is {@code approximate}, the prefix index's page is
 * {@link RoutingConfig#APPROXIMATE_PAGE_SIZE_TOKENS} tokens (a quarter of the pages of vLLM's 16-token
 * blocks to hash, walk and hold); in the event modes it stays the engines' block,
 * {@link RoutingConfig#defaults()}'s 16, which the events' blocks must be a multiple of.
 *
 * <p>Stateless and thread-safe.
 */
public final class ConfigLoader {
  private static final ObjectMapper YAML = newMapper();

  private ConfigLoader() {}

  /**
   * Loads {@code file} (or only defaults when {@code null}) and applies {@code overrides}.
   *
   * @param overrides values keyed by dotted YAML path (e.g. {@code timeouts.connect} → {@code "2s"},
   *     {@code backends} → a list of one-line backend strings); {@code null} values are ignored
   * @throws ConfigException naming the file or the offending key and value
   */
  public static ProxyConfig load(Path file, Map<String, ?> overrides) {
    String yaml = "";
    if (file != null) {
      try {
        yaml = Files.readString(file);
      } catch (IOException e) {
        throw new ConfigException("config: cannot read " + file + " (" + e + ")", e);
      }
    }
    try {
      return parse(yaml, overrides);
    } catch (ConfigException e) {
      throw new ConfigException((file == null ? "" : file + ": ") + e.getMessage(), e.getCause());
    }
  }

  /**
   * Parses {@code yaml} (may be empty) over the defaults and applies {@code overrides}.
   *
   * @throws ConfigException naming the offending key and value
   */
  public static ProxyConfig parse(String yaml, Map<String, ?> overrides) {
    ObjectNode tree = YAML.valueToTree(ProxyConfig.defaults());
    JsonNode file;
    try {
      file = yaml == null || yaml.isBlank() ? null : YAML.readTree(yaml);
      if (file != null && !file.isNull() && !file.isMissingNode()) {
        if (!file.isObject()) {
          throw new ConfigException("config: expected a YAML mapping at the top level, got " + file.getNodeType());
        }
        merge(tree, (ObjectNode) file);
      }
    } catch (JsonProcessingException e) {
      throw new ConfigException("config: not valid YAML: " + e.getOriginalMessage(), e);
    }
    boolean pageGiven = false;
    if (overrides != null) {
      for (Map.Entry<String, ?> o : overrides.entrySet()) {
        if (o.getValue() != null) {
          set(tree, o.getKey(), YAML.valueToTree(o.getValue()));
          pageGiven |= o.getKey().equals(PAGE_SIZE_KEY);
        }
      }
    }
    pageGiven |= file != null && file.path("routing").has("pageSizeTokens");
    if (!pageGiven && "approximate".equals(tree.path("index").path("mode").asText())) {
      set(tree, PAGE_SIZE_KEY, YAML.valueToTree(RoutingConfig.APPROXIMATE_PAGE_SIZE_TOKENS));
    }
    try {
      return YAML.treeToValue(tree, ProxyConfig.class);
    } catch (JsonProcessingException e) {
      throw new ConfigException(describe(e), e);
    } catch (IllegalArgumentException e) {
      throw new ConfigException(e.getMessage(), e);
    }
  }

  /** The YAML path of the prefix index's page size, whose default depends on the index mode. */
  private static final String PAGE_SIZE_KEY = "routing.pageSizeTokens";

  /** {@code config} as YAML, every option written out (the format {@link #parse} reads). */
  public static String toYaml(ProxyConfig config) {
    try {
      return YAML.writeValueAsString(config);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  private static void merge(ObjectNode target, ObjectNode source) {
    for (Map.Entry<String, JsonNode> e : source.properties()) {
      JsonNode existing = target.get(e.getKey());
      if (existing instanceof ObjectNode && e.getValue() instanceof ObjectNode) {
        merge((ObjectNode) existing, (ObjectNode) e.getValue());
      } else {
        target.set(e.getKey(), e.getValue());
      }
    }
  }

  private static void set(ObjectNode root, String path, JsonNode value) {
    String[] keys = path.split("\\.");
    ObjectNode node = root;
    for (int i = 0; i < keys.length - 1; i++) {
      JsonNode child = node.get(keys[i]);
      if (!(child instanceof ObjectNode)) {
        child = node.putObject(keys[i]);
      }
      node = (ObjectNode) child;
    }
    node.set(keys[keys.length - 1], value);
  }

  private static String describe(JsonProcessingException e) {
    if (!(e instanceof JsonMappingException)) {
      return "config: " + e.getOriginalMessage();
    }
    JsonMappingException m = (JsonMappingException) e;
    String path = path(m);
    if (m instanceof UnrecognizedPropertyException) {
      UnrecognizedPropertyException u = (UnrecognizedPropertyException) m;
      TreeSet<String> known = u.getKnownPropertyIds().stream().map(String::valueOf)
          .collect(Collectors.toCollection(TreeSet::new));
      return path + ": unknown key (expected one of: " + String.join(", ", known) + ")";
    }
    Throwable cause = m.getCause();
    if (cause instanceof ConfigException) {
      return cause.getMessage(); // already names its full path (e.g. routing.tokenizer)
    }
    if (m instanceof ValueInstantiationException && cause instanceof IllegalArgumentException) {
      return path.isEmpty() ? cause.getMessage() : path + "." + cause.getMessage();
    }
    if (cause instanceof IllegalArgumentException) {
      return path + ": " + cause.getMessage();
    }
    if (m instanceof InvalidFormatException) {
      InvalidFormatException f = (InvalidFormatException) m;
      return path + ": " + f.getValue() + " (expected: " + typeName(f.getTargetType()) + ")";
    }
    if (m instanceof MismatchedInputException) {
      MismatchedInputException f = (MismatchedInputException) m;
      return path + ": wrong type (expected: " + typeName(f.getTargetType()) + ")";
    }
    return (path.isEmpty() ? "config" : path) + ": " + m.getOriginalMessage();
  }

  private static String path(JsonMappingException m) {
    StringBuilder sb = new StringBuilder();
    for (JsonMappingException.Reference r : m.getPath()) {
      if (r.getIndex() >= 0) {
        sb.append('[').append(r.getIndex()).append(']');
      } else if (r.getFieldName() != null) {
        if (sb.length() > 0) {
          sb.append('.');
        }
        sb.append(r.getFieldName());
      }
    }
    return sb.toString();
  }

  private static String typeName(Class<?> type) {
    if (type == null) {
      return "a value of another type";
    }
    if (type == int.class || type == Integer.class || type == long.class || type == Long.class) {
      return "a whole number";
    }
    if (type == double.class || type == Double.class) {
      return "a number";
    }
    if (type == boolean.class || type == Boolean.class) {
      return "true or false";
    }
    if (type == Duration.class) {
      return "a duration such as 5s";
    }
    if (type == String.class) {
      return "a string";
    }
    if (java.util.List.class.isAssignableFrom(type)) {
      return "a list";
    }
    return "a " + type.getSimpleName() + " mapping";
  }

  private static ObjectMapper newMapper() {
    SimpleModule durations = new SimpleModule("kvroute-config-values");
    durations.addSerializer(Duration.class, new JsonSerializer<>() {
      @Override
      public void serialize(Duration value, JsonGenerator gen, SerializerProvider serializers) throws IOException {
        gen.writeString(Durations.format(value));
      }
    });
    durations.addDeserializer(Duration.class, new JsonDeserializer<>() {
      @Override
      public Duration deserialize(JsonParser p, DeserializationContext ctxt) throws IOException {
        if (p.currentToken() != JsonToken.VALUE_STRING) {
          throw JsonMappingException.from(p, "duration",
              new IllegalArgumentException(p.getText() + " (expected: a duration with its unit, such as 5s)"));
        }
        try {
          return Durations.parse(p.getText());
        } catch (IllegalArgumentException e) {
          throw JsonMappingException.from(p, "duration", e);
        }
      }
    });
    // policy.loadMeasure is written and read by its configuration name (in-flight, prefilling)
    durations.addSerializer(LoadMeasure.class, new JsonSerializer<>() {
      @Override
      public void serialize(LoadMeasure value, JsonGenerator gen, SerializerProvider serializers) throws IOException {
        gen.writeString(value.configName());
      }
    });
    durations.addDeserializer(LoadMeasure.class, new JsonDeserializer<>() {
      @Override
      public LoadMeasure deserialize(JsonParser p, DeserializationContext ctxt) throws IOException {
        try {
          return LoadMeasure.fromName(p.getValueAsString());
        } catch (IllegalArgumentException e) {
          throw JsonMappingException.from(p, "loadMeasure",
              new IllegalArgumentException(p.getText() + " (expected: in-flight or prefilling)"));
        }
      }
    });
    YAMLFactory factory = YAMLFactory.builder()
        .disable(YAMLGenerator.Feature.WRITE_DOC_START_MARKER)
        .enable(YAMLGenerator.Feature.MINIMIZE_QUOTES)
        .build();
    return new ObjectMapper(factory)
        .registerModule(durations)
        .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
        .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
        .disable(DeserializationFeature.ACCEPT_FLOAT_AS_INT);
  }
}
