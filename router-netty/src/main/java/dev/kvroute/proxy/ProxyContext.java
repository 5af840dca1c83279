package dev.kvroute.proxy;

import dev.kvroute.core.RouterCore;
import dev.kvroute.core.Ticker;
import dev.kvroute.core.request.RequestParser;
import dev.kvroute.proxy.config.ProxyConfig;
import java.util.concurrent.Executor;

/**
 * The services shared by every connection of one proxy: configuration, routing core, request
 * parser, backends, upstream pools, the control client, metrics, and the bounded pool that parses
 * and tokenizes large request bodies off the event loops ({@code bodyWorkers}; it rejects work when
 * its queue is full), the client connections ({@code clients}, for a graceful drain), the
 * engine paths clients may reach ({@code apiPaths}, the allow-list), the fleet's models
 * ({@code models}, kept current by {@code discovery}), and admission control ({@code admission}:
 * per-backend limits and the router's queue), and the engine's tokenizer client ({@code engineTokens},
 * {@code null} unless some model's tokenizer is {@code engine}).
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
    Ticker ticker,
    Executor bodyWorkers,
    ClientConnections clients,
    ApiPaths apiPaths,
    ModelCatalog models,
    ModelDiscovery discovery,
    Admission admission,
    EngineTokenizer engineTokens) {}
