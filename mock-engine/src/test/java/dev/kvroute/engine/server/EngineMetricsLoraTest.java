package dev.kvroute.engine.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.engine.model.LoraSlots;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The mock's vllm:lora_requests_info page, as vLLM's Prometheus logger leaves it. */
class EngineMetricsLoraTest {
  private static final Pattern LINE = Pattern.compile("vllm:lora_requests_info\\{([^}]*)} (\\S+)");

  private static Map<String, Double> series(String text) {
    Map<String, Double> out = new HashMap<>();
    Matcher m = LINE.matcher(text);
    while (m.find()) {
      out.put(m.group(1), Double.parseDouble(m.group(2)));
    }
    return out;
  }

  /**
   * vLLM keeps a series for every label combination it ever set (value: when it was last current);
   * the mock rendered only the current one, so a router reading every line was never tested as vLLM
   * would test it.
   */
  @Test
  void pastAdapterStatesStayOnThePageAndTheCurrentOneIsTheLatest() {
    EngineMetrics metrics = new EngineMetrics("m", "0");
    LoraSlots slots = new LoraSlots(2, 0);
    slots.acquire("sql", 0);
    String first = metrics.renderLora(slots, List.of());
    assertThat(series(first)).containsOnlyKeys(
        "max_lora=\"2\",running_lora_adapters=\"sql\",waiting_lora_adapters=\"\"");

    slots.release("sql", 1);
    slots.acquire("chat", 2);
    Map<String, Double> now = series(metrics.renderLora(slots, List.of("math")));
    String old = "max_lora=\"2\",running_lora_adapters=\"sql\",waiting_lora_adapters=\"\"";
    String current = "max_lora=\"2\",running_lora_adapters=\"chat\",waiting_lora_adapters=\"math\"";
    assertThat(now).containsOnlyKeys(old, current);
    assertThat(now.get(current)).isGreaterThan(now.get(old));

    // back to an earlier state: that series becomes the latest again, nothing is duplicated
    slots.release("chat", 3);
    slots.acquire("sql", 4);
    Map<String, Double> again = series(metrics.renderLora(slots, List.of()));
    assertThat(again).hasSize(2);
    assertThat(again.get(old)).isGreaterThan(again.get(current));
  }

  @Test
  void thePageKeepsABoundedNumberOfPastSeries() {
    EngineMetrics metrics = new EngineMetrics("m", "0");
    LoraSlots slots = new LoraSlots(1, 0);
    String text = "";
    for (int i = 0; i < EngineMetrics.LORA_SERIES_KEPT + 10; i++) {
      slots.acquire("a" + i, i);
      text = metrics.renderLora(slots, List.of());
      slots.release("a" + i, i);
    }
    assertThat(series(text)).hasSize(EngineMetrics.LORA_SERIES_KEPT)
        .containsKey("max_lora=\"1\",running_lora_adapters=\"a" + (EngineMetrics.LORA_SERIES_KEPT + 9)
            + "\",waiting_lora_adapters=\"\"");
  }
}
