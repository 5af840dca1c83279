/**
 * Prompt rendering and tokenization: {@link dev.kvroute.core.tokenize.PromptTokenizer} renders a
 * {@code RequestView} (ChatML-style for chat) and tokenizes it with a {@link
 * dev.kvroute.core.tokenize.Tokenizer} (jtokkit), with a Caffeine cache of pieces; the router, the mock
 * engine and the simulator share it so all three see the same tokens.
 *
 * <p>May use {@code dev.kvroute.core.request}, the JDK, jtokkit and Caffeine.
 */
package dev.kvroute.core.tokenize;
