package dev.kvroute.core.admission;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

final class RequestFieldsTest {
  static RequestFields read(String json) {
    byte[] b = json.getBytes(StandardCharsets.UTF_8);
    return RequestFields.read(b, 0, b.length);
  }

  @Test
  void readsTopLevelPriorityAndUserOnly() {
    RequestFields f = read("{\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"priority\":9,\"user\":\"inner\"}],"
        + "\"user\":\"alice\",\"priority\":-2}");
    assertThat(f).isEqualTo(new RequestFields(-2, "alice"));
  }

  @Test
  void wrongTypesAndNonObjectsAreAbsent() {
    assertThat(read("{\"priority\":1.5,\"user\":7}")).isEqualTo(new RequestFields(null, null));
    assertThat(read("{\"priority\":99999999999}")).isEqualTo(new RequestFields(null, null));
    assertThat(read("[1,2]")).isEqualTo(new RequestFields(null, null));
    assertThat(read("{\"priority\":")).isEqualTo(new RequestFields(null, null));
  }
}
