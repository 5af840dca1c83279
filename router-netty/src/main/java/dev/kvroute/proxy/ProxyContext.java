package dev.kvroute.proxy;

import dev.kvroute.core.RouterCore;
import dev.kvroute.core.Ticker;
import dev.kvroute.core.request.RequestParser;
import dev.kvroute.proxy.config.ProxyConfig;

/**
 * The services shared by every connection of one proxy: configuration, routing core, request
 * parser, backends, upstream pools, the control client and metrics.
 *
 * <p>Immutable holder of thread-safe services.
 */
record ProxyContext(
    ProxyConfig config,
    RouterCore core,
    RequestParser parser,
    BackendRegistry backends,
    UpstreamPool pool,
    ControlClient control,
    ProxyMetrics metrics,
    Ticker ticker) {}
