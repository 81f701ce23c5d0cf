package dev.silo.interop.proxy;

import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.ChannelzService;
import io.grpc.protobuf.services.ProtoReflectionService;
import java.lang.reflect.Field;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.Date;
import java.util.List;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.common.metrics.MetricsExporterType;
import org.apache.rocketmq.common.utils.AbstractStartAndShutdown;
import org.apache.rocketmq.common.utils.StartAndShutdown;
import org.apache.rocketmq.proxy.ProxyMode;
import org.apache.rocketmq.proxy.ProxyStartup;
import org.apache.rocketmq.proxy.config.Configuration;
import org.apache.rocketmq.proxy.config.ConfigurationManager;
import org.apache.rocketmq.proxy.config.ProxyConfig;
import org.apache.rocketmq.proxy.grpc.GrpcServer;
import org.apache.rocketmq.proxy.grpc.GrpcServerBuilder;
import org.apache.rocketmq.proxy.grpc.v2.GrpcMessagingApplication;
import org.apache.rocketmq.proxy.metrics.ProxyMetricsManager;
import org.apache.rocketmq.proxy.processor.DefaultMessagingProcessor;
import org.apache.rocketmq.proxy.processor.MessagingProcessor;
import org.apache.rocketmq.proxy.remoting.RemotingProtocolServer;
import org.apache.rocketmq.remoting.netty.NettyRemotingServer;
import org.apache.rocketmq.remoting.netty.NettyServerConfig;

/**
 * Starts the unmodified Apache RocketMQ proxy (cluster mode) with its gRPC and remoting listeners
 * bound to one loopback address instead of every interface.
 *
 * <p>The stock entry point ({@code ProxyStartup.main}) builds the gRPC server with
 * {@code NettyServerBuilder.forPort} and the remoting server with a default
 * {@code NettyServerConfig} (bind address 0.0.0.0), and offers no setting for either. This class
 * assembles the same components from the proxy's public classes, in the same order, with two
 * subclasses that change only the listen address before anything binds.
 *
 * <p>Usage: {@code LoopbackProxy CONFIG_JSON [BIND_HOST]} (BIND_HOST defaults to 127.0.0.1 and must
 * be a loopback address). CONFIG_JSON is the proxy's usual rmq-proxy.json.
 */
public final class LoopbackProxy {

    private LoopbackProxy() {
    }

    /** Keeps the start/stop order of the components, like the stock start-up. */
    private static final class Components extends AbstractStartAndShutdown {
        void add(StartAndShutdown component) {
            appendStartAndShutdown(component);
        }
    }

    /** The proxy's gRPC server builder, listening on HOST:PORT rather than *:PORT. */
    static final class LoopbackGrpcServerBuilder extends GrpcServerBuilder {
        LoopbackGrpcServerBuilder(ThreadPoolExecutor executor, String host, int port) {
            super(executor, port);
            // NettyServerBuilder keeps its listen addresses in a private list and has no way to
            // drop the wildcard one that forPort added; replace it in place so that every other
            // setting the proxy applied to this builder is kept.
            try {
                Field field = NettyServerBuilder.class.getDeclaredField("listenAddresses");
                field.setAccessible(true);
                @SuppressWarnings("unchecked")
                List<SocketAddress> addresses = (List<SocketAddress>) field.get(serverBuilder);
                addresses.clear();
                addresses.add(new InetSocketAddress(host, port));
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("cannot set the gRPC listen address", e);
            }
        }
    }

    /** The proxy's remoting server, with the bind address of its Netty server set to HOST. */
    static final class LoopbackRemotingProtocolServer extends RemotingProtocolServer {
        LoopbackRemotingProtocolServer(MessagingProcessor processor, String host) {
            super(processor);
            // The server config is created inside the constructor and only read in start().
            try {
                Field field = NettyRemotingServer.class.getDeclaredField("nettyServerConfig");
                field.setAccessible(true);
                NettyServerConfig config = (NettyServerConfig) field.get(defaultRemotingServer);
                config.setBindAddress(host);
            } catch (ReflectiveOperationException | ClassCastException e) {
                throw new IllegalStateException("cannot set the remoting bind address", e);
            }
        }
    }

    public static void main(String[] args) {
        if (args.length < 1 || args.length > 2) {
            System.err.println("usage: LoopbackProxy CONFIG_JSON [BIND_HOST]");
            System.exit(2);
        }
        String host = args.length == 2 ? args[1] : "127.0.0.1";
        try {
            if (!InetAddress.getByName(host).isLoopbackAddress()) {
                throw new IllegalArgumentException("bind host " + host + " is not a loopback address");
            }
            System.setProperty(Configuration.CONFIG_PATH_PROPERTY, args[0]);
            ConfigurationManager.initEnv();
            ConfigurationManager.intConfig();
            ProxyConfig config = ConfigurationManager.getProxyConfig();
            if (!ProxyMode.isClusterMode(config.getProxyMode())) {
                throw new IllegalArgumentException("only proxyMode cluster is supported, got " + config.getProxyMode());
            }
            if (config.getMetricsExporterType() == MetricsExporterType.PROM) {
                // The Prometheus exporter opens its own HTTP listener on every interface.
                throw new IllegalArgumentException("metricsExporterType PROM is not supported (it binds every interface)");
            }

            ProxyStartup.initThreadPoolMonitor();
            Components components = new Components();
            ThreadPoolExecutor executor = ProxyStartup.createServerExecutor();
            components.appendShutdown(executor::shutdown);

            ProxyMetricsManager metrics = ProxyMetricsManager.initClusterMode(config);
            components.add(metrics);
            MessagingProcessor processor = DefaultMessagingProcessor.createForClusterMode();
            components.add(processor);
            GrpcMessagingApplication application = GrpcMessagingApplication.create(processor);
            components.add(application);

            GrpcServer grpcServer = new LoopbackGrpcServerBuilder(executor, host, config.getGrpcServerPort())
                .addService(application)
                .addService(ChannelzService.newInstance(100))
                .addService(ProtoReflectionService.newInstance())
                .configInterceptor()
                .shutdownTime(config.getGrpcShutdownTimeSeconds(), TimeUnit.SECONDS)
                .build();
            components.add(grpcServer);
            components.add(new LoopbackRemotingProtocolServer(processor, host));

            components.start();
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                try {
                    components.preShutdown();
                    components.shutdown();
                } catch (Exception e) {
                    e.printStackTrace();
                }
            }, "proxy-shutdown"));
            System.out.printf("%s proxy started: grpc %s:%d, remoting %s:%d, name server %s%n", new Date(),
                host, config.getGrpcServerPort(), host, config.getRemotingListenPort(), config.getNamesrvAddr());
        } catch (Exception e) {
            e.printStackTrace();
            System.exit(1);
        }
    }
}
