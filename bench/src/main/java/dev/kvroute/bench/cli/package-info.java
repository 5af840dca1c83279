/**
 * The bench commands {@code simulate}, {@code loadtest} and {@code demo} (picocli), and their shared
 * option groups; the {@code kvroute} launcher in kvroute-app composes them.
 *
 * <p>May use every bench package, router-core, mock-engine and router-netty; never the app.
 */
package dev.kvroute.bench.cli;
