package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

final class RequestIdTest {

  @Test
  void theGeneratedRequestIdIsThirtyTwoHexDigitsAsTheFormatterWritesThem() {
    SplittableRandom random = new SplittableRandom(18);
    for (int i = 0; i < 1000; i++) {
      long hi = i < 3 ? new long[] {0, -1, Long.MIN_VALUE}[i] : random.nextLong();
      long lo = random.nextLong();
      assertThat(ProxyHandler.newRequestId(hi, lo)).isEqualTo(String.format("%016x%016x", hi, lo));
    }
  }
}
