package dev.silo.interop.proxy;

import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.ChannelzService;
import io.grpc.protobuf.services.ProtoReflectionService;
import java.io.IOException;
import java.lang.reflect.Field;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.broker.BrokerStartup;
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
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.ha.DefaultHAService;
import org.apache.rocketmq.store.ha.HAService;

/**
 * Starts the unmodified Apache RocketMQ proxy (cluster or local mode) with its gRPC and remoting
 * listeners bound to one loopback address instead of every interface.
 *
 * <p>The stock entry point ({@code ProxyStartup.main}) builds the gRPC server with
 * {@code NettyServerBuilder.forPort} and the remoting server with a default
 * {@code NettyServerConfig} (bind address 0.0.0.0), and offers no setting for either. This class
 * assembles the same components from the proxy's public classes, in the same order, with two
 * subclasses that change only the listen address before anything binds.
 *
 * <p>In local mode ({@code "proxyMode": "local"} and {@code brokerConfigPath} in CONFIG_JSON) the
 * proxy embeds a broker, built from that properties file by {@code BrokerStartup} exactly as the
 * stock local-mode start-up does, and talks to it in-process; gRPC clients are then registered with
 * the broker's own producer and consumer managers. The broker opens three more listeners: listenPort
 * and listenPort-2 honour the file's {@code bindAddress}, which must therefore be a loopback address
 * (checked here), and the HA port, which the stock HA service binds on every interface, is bound to
 * BIND_HOST by {@link LoopbackHAService}.
 *
 * <p>Usage: {@code LoopbackProxy CONFIG_JSON [BIND_HOST]} (BIND_HOST defaults to 127.0.0.1 and must
 * be a loopback address). CONFIG_JSON is the proxy's usual rmq-proxy.json.
 */
public final class LoopbackProxy {

    /** The one address every listener binds; read by {@link LoopbackHAService} inside the broker. */
    private static volatile String bindHost = "127.0.0.1";

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

    /**
     * The stock master HA service with its replication listener on the launcher's bind host rather
     * than the wildcard address. The store creates its HA service through
     * {@code ServiceProvider.loadClass}, which reads the class name from this module's
     * {@code META-INF/service/org.apache.rocketmq.store.ha.HAService}; that is the only hook, since
     * the listen address is fixed when the store calls {@code init} from its own {@code start}, too
     * late for the launcher to change it from outside. Public with a no-argument constructor because
     * the service loader instantiates it reflectively.
     */
    public static final class LoopbackHAService extends DefaultHAService {
        @Override
        public void init(DefaultMessageStore store) throws IOException {
            super.init(store);
            String host = bindHost;
            int port = store.getMessageStoreConfig().getHaListenPort();
            try {
                Field field = AcceptSocketService.class.getDeclaredField("socketAddressListen");
                field.setAccessible(true);
                field.set(this.acceptSocketService, new InetSocketAddress(host, port));
            } catch (ReflectiveOperationException e) {
                throw new IOException("cannot bind the HA listener to " + host + ":" + port, e);
            }
        }
    }

    /**
     * Builds the embedded broker of local mode from {@code brokerConfigPath} (plus the proxy's
     * namesrvAddr, which overrides the file's, as in the stock start-up) and refuses it if any of its
     * listeners would leave loopback. {@code BrokerStartup.createBrokerController} also loads the
     * store and registers the broker's own shutdown hook; it exits the JVM on a bad configuration.
     */
    private static BrokerController createLocalBroker(ProxyConfig config) throws Exception {
        if (config.getBrokerConfigPath() == null || config.getBrokerConfigPath().isEmpty()) {
            throw new IllegalArgumentException("proxyMode local needs brokerConfigPath");
        }
        List<String> brokerArgs = new ArrayList<>(List.of("-c", config.getBrokerConfigPath()));
        if (config.getNamesrvAddr() != null && !config.getNamesrvAddr().isEmpty()) {
            brokerArgs.add("-n");
            brokerArgs.add(config.getNamesrvAddr());
        }
        BrokerController broker = BrokerStartup.createBrokerController(brokerArgs.toArray(new String[0]));
        String problem = null;
        String brokerBind = broker.getNettyServerConfig().getBindAddress();
        if (!InetAddress.getByName(brokerBind).isLoopbackAddress()) {
            // Both broker ports (listenPort and the fast port listenPort-2) bind this address.
            problem = "broker bindAddress " + brokerBind + " is not a loopback address";
        } else if (broker.getBrokerConfig().getMetricsExporterType() == MetricsExporterType.PROM) {
            problem = "broker metricsExporterType PROM is not supported (it binds every interface)";
        } else {
            HAService ha = broker.getMessageStore().getHaService();
            if (ha != null && !(ha instanceof LoopbackHAService)) {
                // For example controller mode, which always uses AutoSwitchHAService.
                problem = "the broker's HA service is " + ha.getClass().getName() + ", which binds every interface";
            }
        }
        if (problem != null) {
            broker.shutdown();
            throw new IllegalArgumentException(problem);
        }
        return broker;
    }

    /** The embedded broker as one component: started before the proxy's own and stopped after them. */
    private static StartAndShutdown brokerComponent(BrokerController broker) {
        return new StartAndShutdown() {
            @Override
            public void start() throws Exception {
                broker.start();
                System.out.printf("%s embedded broker %s started at %s%n", new Date(),
                    broker.getBrokerConfig().getBrokerName(), broker.getBrokerAddr());
            }

            @Override
            public void shutdown() {
                broker.shutdown();
            }
        };
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
            boolean local = ProxyMode.isLocalMode(config.getProxyMode());
            if (!local && !ProxyMode.isClusterMode(config.getProxyMode())) {
                throw new IllegalArgumentException("proxyMode must be cluster or local, got " + config.getProxyMode());
            }
            bindHost = host;
            if (config.getMetricsExporterType() == MetricsExporterType.PROM) {
                // The Prometheus exporter opens its own HTTP listener on every interface.
                throw new IllegalArgumentException("metricsExporterType PROM is not supported (it binds every interface)");
            }

            ProxyStartup.initThreadPoolMonitor();
            Components components = new Components();
            ThreadPoolExecutor executor = ProxyStartup.createServerExecutor();
            components.appendShutdown(executor::shutdown);

            MessagingProcessor processor;
            String upstream;
            if (local) {
                BrokerController broker = createLocalBroker(config);
                // Local mode records the proxy's metrics on the broker's meter; there is no
                // separate metrics component to start.
                ProxyMetricsManager.initLocalMode(broker.getBrokerMetricsManager(), config);
                components.add(brokerComponent(broker));
                processor = DefaultMessagingProcessor.createForLocalMode(broker);
                upstream = "embedded broker " + host + ":" + broker.getNettyServerConfig().getListenPort();
            } else {
                components.add(ProxyMetricsManager.initClusterMode(config));
                processor = DefaultMessagingProcessor.createForClusterMode();
                upstream = "cluster " + config.getRocketMQClusterName();
            }
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
            System.out.printf("%s proxy started (%s mode): grpc %s:%d, remoting %s:%d, %s, name server %s%n",
                new Date(), local ? "local" : "cluster", host, config.getGrpcServerPort(), host,
                config.getRemotingListenPort(), upstream, config.getNamesrvAddr());
        } catch (Exception e) {
            e.printStackTrace();
            System.exit(1);
        }
    }
}
