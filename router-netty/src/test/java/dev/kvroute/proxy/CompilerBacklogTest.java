package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

final class CompilerBacklogTest {

  /** What {@code jcmd PID Compiler.queue} printed on HotSpot 17.0.15 with C2 busy. */
  private static final String BUSY = """
      Current compiles:\s
      C2 CompilerThread0  1386       4       java.lang.StringLatin1::compareToCI (108 bytes)
      C1 CompilerThread0  1409       2       javax.management.ImmutableDescriptor::getFieldValue (87 bytes)

      C1 compile queue:
      1404       2       java.lang.PublicMethods$MethodList::merge (192 bytes)

      C2 compile queue:
      1329       4       java.util.concurrent.ConcurrentHashMap::get (162 bytes)
      1333       4       java.lang.StringBuilder::toString (35 bytes)
      1336 %     4       dev.kvroute.core.index.RadixPrefixIndex::match @ 126 (412 bytes)

      """;

  private static final String IDLE = """
      Current compiles:\s

      C1 compile queue:
      Empty

      C2 compile queue:
      Empty

      """;

  @Test
  void countsTheC2TaskInProgressAndTheQueuedOnesButNotC1s() {
    assertThat(CompilerBacklog.c2Tasks(BUSY)).isEqualTo(4);
  }

  @Test
  void anIdleCompilerHasNoBacklog() {
    assertThat(CompilerBacklog.c2Tasks(IDLE)).isZero();
  }

  @Test
  void aJvmWithoutAC2QueueIsUnknownNotIdle() {
    assertThat(CompilerBacklog.c2Tasks("Current compiles: \n\nC1 compile queue:\nEmpty\n"))
        .isEqualTo(CompilerBacklog.UNKNOWN);
    assertThat(CompilerBacklog.c2Tasks("")).isEqualTo(CompilerBacklog.UNKNOWN);
  }

  @Test
  void thisJvmsBacklogIsReadable() {
    CompilerBacklog b = CompilerBacklog.of();
    assertThat(b).isNotNull();
    assertThat(b.pending()).isGreaterThanOrEqualTo(0);
  }
}
