/**
 * kvroute as the Gateway API Inference Extension's endpoint picker ({@code kvroute epp}): Envoy's
 * {@code ext_proc} service on grpc-java ({@link dev.kvroute.epp.ExtProcService}, one {@link
 * dev.kvroute.epp.EppStream} per request), the protocol's names ({@link dev.kvroute.epp.Gaie}), the
 * server with gRPC health and metrics ({@link dev.kvroute.epp.EppServer}) and the InferencePool reader
 * ({@link dev.kvroute.epp.InferencePools}). Picking itself is router-netty's {@link
 * dev.kvroute.proxy.EndpointPicker}. {@code docs/kubernetes.md} describes the protocol point by point.
 *
 * <p>May use router-core, router-netty, grpc-java, Envoy's API stubs and fabric8; never the mock
 * engine (only its tests do), bench or the app.
 */
package dev.kvroute.epp;
