/**
 * The kvroute program: {@link dev.kvroute.cli.Main} (the launcher's command line), {@code serve}
 * ({@link dev.kvroute.cli.ServeCommand}, which also composes {@code --mock-backends}), {@code
 * mock-engine}, {@code healthcheck}, and bench's commands. Built into {@code kvroute-app/target/kvroute.jar}.
 *
 * <p>May use every other module; nothing depends on it.
 */
package dev.kvroute.cli;
