/**
 * The process's logging: one line per event on standard error (text or JSON), the level from
 * {@code --log-level} or {@code KVROUTE_LOG_LEVEL}; every module logs through {@link System.Logger},
 * Netty through the same loggers.
 *
 * <p>May use the JDK, Jackson's generator and Netty's logger factory.
 */
package dev.kvroute.cli.logging;
