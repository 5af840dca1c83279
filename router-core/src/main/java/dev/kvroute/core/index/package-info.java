/**
 * The approximate prefix index: which token pages each backend holds in its KV cache ({@link
 * dev.kvroute.core.index.PrefixIndex}, implemented by {@link dev.kvroute.core.index.RadixPrefixIndex}),
 * per-backend capacity and LRU eviction, pins for in-flight requests, page hashing ({@link
 * dev.kvroute.core.index.PageHash}) and primitive maps.
 *
 * <p>May use {@code dev.kvroute.core} (backend ids, ticker) and the JDK only.
 */
package dev.kvroute.core.index;
