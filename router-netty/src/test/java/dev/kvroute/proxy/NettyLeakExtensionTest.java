package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The leak check used by the integration tests really sees a leak. */
final class NettyLeakExtensionTest {
  @Test
  void aDroppedBufferIsReported() {
    new NettyLeakExtension(); // installs the log handler
    NettyLeakExtension.leaks().clear();
    leak();
    await().atMost(Duration.ofSeconds(10)).until(() -> {
      System.gc();
      for (int i = 0; i < 100; i++) {
        PooledByteBufAllocator.DEFAULT.buffer(8).release();
      }
      return !NettyLeakExtension.leaks().isEmpty();
    });
    assertThat(NettyLeakExtension.leaks().get(0)).contains("LEAK");
    NettyLeakExtension.leaks().clear();
  }

  private static void leak() {
    ByteBuf b = PooledByteBufAllocator.DEFAULT.buffer(8);
    b.writeInt(1);
  }
}
