package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.internal.logging.InternalLoggerFactory;
import io.netty.util.internal.logging.JdkLoggerFactory;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Fails a test class when Netty's leak detector reported a leak while it ran (Zuul's
 * {@code CustomLeakDetector} habit). Requires paranoid leak detection (the build sets
 * {@code -Dio.netty.leakDetection.level=paranoid}) and checks it. After the class, it forces garbage
 * collection and allocations so that pending leak reports are emitted before counting.
 */
public final class NettyLeakExtension implements BeforeAllCallback, AfterAllCallback {
  private static final List<String> LEAKS = new CopyOnWriteArrayList<>();
  private static final Logger DETECTOR_LOGGER;

  static {
    InternalLoggerFactory.setDefaultFactory(JdkLoggerFactory.INSTANCE);
    DETECTOR_LOGGER = Logger.getLogger(ResourceLeakDetector.class.getName());
    DETECTOR_LOGGER.addHandler(new Handler() {
      @Override
      public void publish(LogRecord record) {
        String msg = record.getMessage();
        if (msg != null && msg.contains("LEAK")) {
          LEAKS.add(msg);
        }
      }

      @Override
      public void flush() {}

      @Override
      public void close() {}
    });
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    assertThat(ResourceLeakDetector.getLevel())
        .as("tests must run with -Dio.netty.leakDetection.level=paranoid")
        .isEqualTo(ResourceLeakDetector.Level.PARANOID);
    LEAKS.clear();
  }

  @Override
  public void afterAll(ExtensionContext context) {
    for (int i = 0; i < 5; i++) {
      System.gc();
      System.runFinalization();
      // leak records are reported when a tracked object is allocated after the leaked one was collected
      for (int j = 0; j < 50; j++) {
        ByteBuf a = PooledByteBufAllocator.DEFAULT.buffer(16);
        a.release();
        ByteBuf b = UnpooledByteBufAllocator.DEFAULT.buffer(16);
        b.release();
      }
    }
    assertThat(LEAKS).as("Netty leak reports").isEmpty();
  }

  /** Leak reports seen so far (for tests of this extension). */
  static List<String> leaks() {
    return LEAKS;
  }
}
