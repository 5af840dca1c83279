/**
 * Reading a generation request body (OpenAI chat and completions, SGLang {@code /generate}) into a
 * {@link dev.kvroute.core.request.RequestView}: model, session key, prompt segments, stream flag, output
 * length; {@link dev.kvroute.core.request.InvalidRequestException} says what was wrong for a 400.
 *
 * <p>May use the JDK and Jackson's streaming parser; nothing else of kvroute.
 */
package dev.kvroute.core.request;
