/**
 * Workloads: the explainer's seed workload (sessions of chat turns with think time), open-loop
 * arrivals, and the chat and completion request bodies they send, with their token counts.
 *
 * <p>May use router-core's request and tokenizer types, mock-engine's engine configuration and Jackson;
 * no networking.
 */
package dev.kvroute.bench.workload;
