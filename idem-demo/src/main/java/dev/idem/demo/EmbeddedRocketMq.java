package dev.idem.demo;

import dev.idem.testkit.TcpProxy;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.namesrv.NamesrvConfig;
import org.apache.rocketmq.namesrv.NamesrvController;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.netty.NettyServerConfig;
import org.apache.rocketmq.store.config.MessageStoreConfig;

/**
 * A RocketMQ name server and broker in the lab's JVM, their store in a directory of the run. The broker binds
 * 127.0.0.1 and tells clients to use 127.0.0.2, where a {@link TcpProxy} forwards to it, so that the lab can swallow
 * the broker's answers to a send. Delay levels are {@value #DELAY_LEVELS}: retries within seconds. (The same set-up as
 * brokers/idem-rocketmq's test fixture, which cannot share main-scope code without the adapter depending on the
 * broker.)
 */
final class EmbeddedRocketMq implements AutoCloseable {
    static final String DELAY_LEVELS = "1s 1s 1s 2s 2s 2s 3s 3s 3s 4s 4s 4s 5s 5s 5s 6s 6s 6s";
    private static final String ADVERTISED_HOST = "127.0.0.2";

    private final NamesrvController nameServer;
    private final BrokerController broker;
    private final TcpProxy proxy;
    private final String nameServerAddress;

    EmbeddedRocketMq(Path dir) throws Exception {
        System.setProperty("rocketmq.remoting.version", Integer.toString(MQVersion.CURRENT_VERSION));
        int nameServerPort = freePort();
        NamesrvConfig namesrvConfig = new NamesrvConfig();
        namesrvConfig.setKvConfigPath(dir.resolve("kvConfig.json").toString());
        namesrvConfig.setConfigStorePath(dir.resolve("namesrv.properties").toString());
        NettyServerConfig namesrvNetty = new NettyServerConfig();
        namesrvNetty.setListenPort(nameServerPort);
        namesrvNetty.setBindAddress("127.0.0.1");
        nameServer = new NamesrvController(namesrvConfig, namesrvNetty, new NettyClientConfig());
        check(nameServer.initialize(), "name server");
        nameServer.start();
        nameServerAddress = "127.0.0.1:" + nameServerPort;

        int port = freeBrokerPort();
        BrokerConfig brokerConfig = new BrokerConfig();
        brokerConfig.setBrokerName("idem-lab-broker");
        brokerConfig.setBrokerClusterName("idem-lab");
        brokerConfig.setNamesrvAddr(nameServerAddress);
        brokerConfig.setBrokerIP1(ADVERTISED_HOST);
        brokerConfig.setListenPort(port);
        NettyServerConfig brokerNetty = new NettyServerConfig();
        brokerNetty.setListenPort(port);
        brokerNetty.setBindAddress("127.0.0.1");
        Path store = dir.resolve("store");
        MessageStoreConfig storeConfig = new MessageStoreConfig();
        storeConfig.setStorePathRootDir(store.toString());
        storeConfig.setStorePathCommitLog(store.resolve("commitlog").toString());
        storeConfig.setStorePathEpochFile(store.resolve("epochFileCheckpoint").toString());
        storeConfig.setStorePathBrokerIdentity(store.resolve("brokerIdentity").toString());
        storeConfig.setMappedFileSizeCommitLog(64 * 1024 * 1024);
        storeConfig.setMappedFileSizeConsumeQueue(100_000 * 20);
        storeConfig.setMaxHashSlotNum(10_000);
        storeConfig.setMaxIndexNum(40_000);
        storeConfig.setMappedFileSizeTimerLog(8 * 1024 * 1024);
        storeConfig.setHaListenPort(port + 1);
        storeConfig.setMessageDelayLevel(DELAY_LEVELS);
        proxy = TcpProxy.start(InetAddress.getByName(ADVERTISED_HOST), port, "127.0.0.1", port);
        broker = new BrokerController(brokerConfig, brokerNetty, new NettyClientConfig(), storeConfig);
        check(broker.initialize(), "broker");
        broker.start();
    }

    String nameServer() {
        return nameServerAddress;
    }

    /** The proxy every client connection to the broker goes through. */
    TcpProxy proxy() {
        return proxy;
    }

    /** Creates {@code topic} with {@code queues} read/write queues and waits until the name server routes it. */
    void createTopic(String topic, int queues) {
        broker.getTopicConfigManager().updateTopicConfig(new TopicConfig(topic, queues, queues, 6));
        broker.registerBrokerAll(true, false, true);
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (nameServer.getRouteInfoManager().pickupTopicRouteData(topic) == null) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("topic " + topic + " not routed by the name server");
            }
            Thread.onSpinWait();
        }
    }

    /**
     * Creates {@code %RETRY%<group>} and {@code %DLQ%<group>} before the group's first consumer starts: otherwise
     * the consumer learns the retry topic's route only at its next name-server poll, 30 s later.
     */
    void createGroupTopics(String group) {
        createTopic(MixAll.getRetryTopic(group), 1);
        createTopic(MixAll.getDLQTopic(group), 1);
    }

    @Override
    public void close() {
        broker.shutdown();
        nameServer.shutdown();
        proxy.close();
    }

    private static void check(boolean initialized, String what) {
        if (!initialized) {
            throw new IllegalStateException("the in-process RocketMQ " + what + " did not initialize");
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    /** A port p with p-2 (the broker's VIP channel) and p+1 (HA) free too. */
    private static int freeBrokerPort() throws IOException {
        for (int attempt = 0; attempt < 50; attempt++) {
            int port = freePort();
            if (port > 1026 && port < 65534 && free(port - 2) && free(port + 1)) {
                return port;
            }
        }
        throw new IOException("no free port with free neighbours for the broker");
    }

    private static boolean free(int port) {
        try (ServerSocket ignored = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}
