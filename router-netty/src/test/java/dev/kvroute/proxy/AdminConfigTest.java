package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvroute.proxy.config.AdminConfig;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

final class AdminConfigTest {
  static AdminConfig admin(String bind, String token, boolean insecure) {
    return new AdminConfig(8081, bind, token, insecure, 1 << 20, Duration.ofSeconds(10), Duration.ofSeconds(30));
  }

  @Test
  void adminOnAllInterfacesWithoutATokenStartedSilentlyAndIsNowRefused() {
    for (String bind : List.of("0.0.0.0", "::", "10.0.0.5", "[::]", "router.example", "::ffff:127.0.0.1")) {
      assertThatThrownBy(() -> admin(bind, null, false)).as(bind)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("token: none with the admin API on " + bind)
          .hasMessageContaining("--admin-insecure-no-token");
      assertThat(admin(bind, "s3cret", false).openWithoutToken()).isFalse();
      assertThat(admin(bind, null, true).openWithoutToken()).as("allowed, and reported").isTrue();
    }
  }

  @Test
  void loopbackNeedsNoToken() {
    for (String bind : List.of("127.0.0.1", "127.1.2.3", "::1", "[::1]", "0:0:0:0:0:0:0:1", "localhost", "LOCALHOST")) {
      assertThat(admin(bind, null, false).openWithoutToken()).as(bind).isFalse();
    }
    assertThat(new AdminConfig(-1, "0.0.0.0", null).enabled()).as("a disabled admin API needs nothing").isFalse();
  }

  @Test
  void limitsAndTimeoutsAreChecked() {
    assertThatThrownBy(() -> new AdminConfig(8081, "127.0.0.1", null, false, 0, Duration.ofSeconds(1), Duration.ofSeconds(1)))
        .hasMessageContaining("maxBodyBytes: 0 (expected: 1..");
    assertThatThrownBy(() -> new AdminConfig(8081, "127.0.0.1", null, false, 10, Duration.ZERO, Duration.ofSeconds(1)))
        .hasMessageContaining("readTimeout: 0s (expected: > 0)");
  }
}
