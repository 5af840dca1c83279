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
  void priorityIsReadAsVllmsRequestModelReadsIt() {
    // pydantic's lax int: whole floats, numeric strings and booleans are integers; big ones saturate
    assertThat(read("{\"priority\":2.0}").priority()).isEqualTo(2);
    assertThat(read("{\"priority\":\" -3 \"}").priority()).isEqualTo(-3);
    assertThat(read("{\"priority\":true}").priority()).isEqualTo(1);
    assertThat(read("{\"priority\":99999999999}").priority()).isEqualTo(Integer.MAX_VALUE);
    assertThat(read("{\"priority\":-99999999999999999999999}").priority()).isEqualTo(Integer.MIN_VALUE);
    assertThat(read("{\"priority\":[1],\"user\":\"u\"}")).isEqualTo(new RequestFields(null, "u"));
  }

  @Test
  void wrongTypesAndNonObjectsAreAbsent() {
    assertThat(read("{\"priority\":1.5,\"user\":7}")).isEqualTo(new RequestFields(null, null));
    assertThat(read("{\"priority\":\"x\"}")).isEqualTo(new RequestFields(null, null));
    assertThat(read("{\"priority\":1e99}")).isEqualTo(new RequestFields(null, null));
    assertThat(read("{\"priority\":null}")).isEqualTo(new RequestFields(null, null));
    assertThat(read("[1,2]")).isEqualTo(new RequestFields(null, null));
    assertThat(read("{\"priority\":")).isEqualTo(new RequestFields(null, null));
  }
}
