package dev.kvroute.proxy;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import javax.management.MBeanServer;
import javax.management.ObjectName;

/**
 * How much work HotSpot's optimizing compiler (C2) has in hand: the tasks it is compiling plus those
 * waiting in its queue, read from the {@code Compiler.queue} diagnostic command (the text {@code jcmd
 * PID Compiler.queue} prints, through the platform MBean server's {@code
 * com.sun.management:type=DiagnosticCommand}, {@code compilerQueue}; no attach, no agent).
 *
 * <p>Why not {@link CompilationMXBean#getTotalCompilationTime()}: that total grows only when a
 * compilation ends, so one long C2 compilation (the proxy's request handlers take 100–400 ms each on a
 * shared core) looks like an idle compiler for as long as it runs. The self warm-up ended on such a
 * pause with 20–60 tasks still queued and the request path's hottest methods still in C1's profiling
 * tier, and the JIT then took 510–630 ms of CPU in each of the first five seconds after {@code /ready}
 * ({@code docs/performance.md}, "Warm start").
 *
 * <p>Where the command is missing (a JVM without HotSpot's diagnostic commands or without the {@code
 * jdk.management} module) {@link #pending()} answers {@value #UNKNOWN}, and callers fall back to the
 * compilation time.
 *
 * <p>Thread-safe; each call runs the diagnostic command (tens of microseconds once compiled).
 */
final class CompilerBacklog {
  /** What {@link #pending()} answers when the compiler's queue cannot be read. */
  static final int UNKNOWN = -1;

  private final MBeanServer server;
  private final ObjectName command;

  private CompilerBacklog(MBeanServer server, ObjectName command) {
    this.server = server;
    this.command = command;
  }

  /** The backlog of this JVM's C2 compiler, or {@code null} when it cannot be read here. */
  static CompilerBacklog of() {
    try {
      MBeanServer server = ManagementFactory.getPlatformMBeanServer();
      ObjectName name = new ObjectName("com.sun.management:type=DiagnosticCommand");
      CompilerBacklog b = new CompilerBacklog(server, name);
      return b.pending() == UNKNOWN ? null : b;
    } catch (Exception | LinkageError e) {
      return null;
    }
  }

  /**
   * C2 tasks in progress plus queued, or {@value #UNKNOWN} when the command failed or its text had
   * no C2 section (a JVM with another optimizing compiler).
   */
  int pending() {
    try {
      return c2Tasks(String.valueOf(server.invoke(command, "compilerQueue", null, null)));
    } catch (Exception | LinkageError e) {
      return UNKNOWN;
    }
  }

  /**
   * The C2 tasks in {@code Compiler.queue}'s text (HotSpot 17 to 25): the lines of its "Current
   * compiles:" section that a C2 compiler thread prints ({@code C2 CompilerThread0  1386  4
   * java.lang.String::hashCode (..)}) plus the task lines of its "C2 compile queue:" section
   * ({@code Empty} when none); {@value #UNKNOWN} when there is no C2 queue section at all.
   */
  static int c2Tasks(String text) {
    int tasks = 0;
    boolean sawC2Queue = false;
    String section = "";
    for (String raw : text.split("\n")) {
      String line = raw.strip();
      if (line.isEmpty()) {
        continue;
      }
      if (line.endsWith(":") && !Character.isDigit(line.charAt(0))) {
        section = line;
        sawC2Queue |= line.equals("C2 compile queue:");
        continue;
      }
      if (section.equals("Current compiles:") && line.startsWith("C2 ")) {
        tasks++;
      } else if (section.equals("C2 compile queue:") && Character.isDigit(line.charAt(0))) {
        tasks++;
      }
    }
    return sawC2Queue ? tasks : UNKNOWN;
  }
}
