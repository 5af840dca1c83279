package dev.kvroute.cli;

import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code kvroute} command line: one launcher for every command. */
@Command(
    name = "kvroute",
    mixinStandardHelpOptions = true,
    version = "kvroute 0.1.0",
    description = "Cache-aware router for LLM inference fleets.",
    subcommands = {
      CommandLine.HelpCommand.class,
      HealthCheckCommand.class,
      MockEngineCommand.class,
      ServeCommand.class,
      dev.kvroute.bench.cli.SimulateCommand.class,
      dev.kvroute.bench.cli.LoadtestCommand.class,
      dev.kvroute.bench.cli.DemoCommand.class,
    })
public final class Main implements Runnable {

  public static void main(String[] args) {
    int code = commandLine().execute(args);
    if (code != 0) {
      System.exit(code);
    }
  }

  /**
   * The command line with kvroute's error handling: a bad flag prints one line naming it (and a hint
   * to {@code --help}) instead of the whole usage; an unexpected failure prints one line instead of a
   * stack trace (set {@code KVROUTE_DEBUG=1} for the trace) and exits with {@code 1}.
   */
  static CommandLine commandLine() {
    CommandLine cl = new CommandLine(new Main());
    cl.setParameterExceptionHandler((e, args) -> {
      CommandLine c = e.getCommandLine();
      PrintWriter err = c.getErr();
      String name = c.getCommandSpec().qualifiedName();
      err.println(name + ": " + e.getMessage());
      CommandLine.UnmatchedArgumentException.printSuggestions(e, err);
      err.println("Try '" + name + " --help' for the options.");
      err.flush();
      return c.getCommandSpec().exitCodeOnInvalidInput();
    });
    cl.setExecutionExceptionHandler((e, c, parsed) -> {
      PrintWriter err = c.getErr();
      err.println(c.getCommandSpec().qualifiedName() + ": " + (e.getMessage() != null ? e.getMessage() : e.toString()));
      if (System.getenv("KVROUTE_DEBUG") != null) {
        e.printStackTrace(err);
      } else {
        err.println("(set KVROUTE_DEBUG=1 for the stack trace)");
      }
      err.flush();
      return CommandLine.ExitCode.SOFTWARE;
    });
    return cl;
  }

  @Override
  public void run() {
    new CommandLine(this).usage(System.out);
  }
}
