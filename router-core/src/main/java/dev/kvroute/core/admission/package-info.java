/**
 * Admission control without networking: the queue of requests waiting for a backend slot ({@link
 * dev.kvroute.core.admission.AdmissionQueue}: bounded in length, bytes and time, by priority, fair
 * between tenants) and the two body fields it reads only when a request must queue ({@link
 * dev.kvroute.core.admission.RequestFields}: vLLM's {@code priority}, OpenAI's {@code user}).
 *
 * <p>May use {@code dev.kvroute.core} (the injected ticker), the JDK and Jackson's streaming parser;
 * no networking, no wall clock.
 */
package dev.kvroute.core.admission;
