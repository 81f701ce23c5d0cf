package dev.silo.interop.server;

import java.io.IOException;
import java.lang.reflect.Field;
import java.net.InetSocketAddress;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.ha.DefaultHAService;

/**
 * The stock master HA service, except that its replication listener binds to the broker's own
 * address ({@code brokerIP2}, which is what the broker advertises as its HA address) instead of every
 * interface. The stock service binds {@code new InetSocketAddress(haListenPort)}, the wildcard
 * address, and offers no setting for it; the broker picks this class up through its service-provider
 * file {@code META-INF/service/org.apache.rocketmq.store.ha.HAService}.
 */
public class LoopbackHAService extends DefaultHAService {

    @Override
    public void init(DefaultMessageStore store) throws IOException {
        super.init(store);
        String host = store.getBrokerConfig().getBrokerIP2();
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
