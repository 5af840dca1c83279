package dev.kvroute.cli;

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
      dev.kvroute.engine.MockEngineCommand.class,
      dev.kvroute.proxy.ServeCommand.class,
      dev.kvroute.bench.cli.SimulateCommand.class,
      dev.kvroute.bench.cli.LoadtestCommand.class,
      dev.kvroute.bench.cli.DemoCommand.class,
    })
public final class Main implements Runnable {

  public static void main(String[] args) {
    int code = new CommandLine(new Main()).execute(args);
    if (code != 0) {
      System.exit(code);
    }
  }

  @Override
  public void run() {
    new CommandLine(this).usage(System.out);
  }
}
