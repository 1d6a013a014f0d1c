package com.example.payments;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.namesrv.NamesrvConfig;
import org.apache.rocketmq.namesrv.NamesrvController;
import org.apache.rocketmq.remoting.common.TlsMode;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.netty.NettyServerConfig;
import org.apache.rocketmq.remoting.netty.TlsSystemConfig;
import org.apache.rocketmq.store.config.MessageStoreConfig;

/**
 * A real RocketMQ name server and broker in the test's JVM, on free ports of 127.0.0.1, storing in a temporary
 * directory. They run until the test JVM exits, which deletes the directory: stopping them cleanly takes about 20 s
 * that nothing here needs.
 */
final class InProcessRocketMQ {
    private final NamesrvController nameServer;
    private final BrokerController broker;
    private final String nameServerAddress;

    InProcessRocketMQ() throws Exception {
        System.setProperty("rocketmq.remoting.version", Integer.toString(MQVersion.CURRENT_VERSION));
        TlsSystemConfig.tlsMode = TlsMode.DISABLED; // else each server generates an RSA certificate as it starts
        Path dir = Files.createTempDirectory("rocketmq-payments-test");
        Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteRecursively(dir)));
        int nameServerPort = freePort();
        NamesrvConfig namesrvConfig = new NamesrvConfig();
        namesrvConfig.setKvConfigPath(dir.resolve("kvConfig.json").toString());
        namesrvConfig.setConfigStorePath(dir.resolve("namesrv.properties").toString());
        NettyServerConfig namesrvNetty = new NettyServerConfig();
        namesrvNetty.setListenPort(nameServerPort);
        namesrvNetty.setBindAddress("127.0.0.1");
        nameServer = new NamesrvController(namesrvConfig, namesrvNetty, new NettyClientConfig());
        if (!nameServer.initialize()) {
            throw new IllegalStateException("the name server did not initialize");
        }
        nameServer.start();
        nameServerAddress = "127.0.0.1:" + nameServerPort;

        int port = freeBrokerPort();
        BrokerConfig brokerConfig = new BrokerConfig();
        brokerConfig.setBrokerName("test-broker");
        brokerConfig.setNamesrvAddr(nameServerAddress);
        brokerConfig.setBrokerIP1("127.0.0.1");
        brokerConfig.setListenPort(port);
        brokerConfig.setTransactionMetricFlushInterval(1000); // its thread spins until this has passed since start
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
        storeConfig.setMappedFileSizeConsumeQueue(10_000 * 20);
        storeConfig.setMaxHashSlotNum(10_000);
        storeConfig.setMaxIndexNum(40_000);
        storeConfig.setMappedFileSizeTimerLog(8 * 1024 * 1024);
        storeConfig.setHaListenPort(port + 1);
        storeConfig.setTimerFlushIntervalMs(30_000); // flushing the timer wheel each second costs a sixth of a core
        broker = new BrokerController(brokerConfig, brokerNetty, new NettyClientConfig(), storeConfig);
        if (!broker.initialize()) {
            throw new IllegalStateException("the broker did not initialize");
        }
        broker.start();
    }

    String nameServer() {
        return nameServerAddress;
    }

    /** Creates {@code topic} with {@code queues} queues and registers it with the name server. */
    void createTopic(String topic, int queues) {
        broker.getTopicConfigManager().updateTopicConfig(new TopicConfig(topic, queues, queues, 6));
        broker.registerBrokerAll(true, false, true);
    }

    /**
     * Creates the group's retry and dead-letter topics before its consumer starts (else the consumer learns their
     * route at its next name-server poll, 30 s later).
     */
    void createGroupTopics(String group) {
        createTopic(MixAll.getRetryTopic(group), 1);
        createTopic(MixAll.getDLQTopic(group), 1);
    }

    /** Messages stored in {@code topic}, all queues. */
    long messages(String topic) throws Exception {
        long count = 0;
        for (int queue = 0; queue < queues(topic); queue++) {
            count += broker.getMessageStore().getMaxOffsetInQueue(topic, queue)
                    - broker.getMessageStore().getMinOffsetInQueue(topic, queue);
        }
        return count;
    }

    /** Whether {@code group} has consumed (committed) every message of {@code topic}. */
    boolean consumedToTheEnd(String group, String topic) throws Exception {
        for (int queue = 0; queue < queues(topic); queue++) {
            long end = broker.getMessageStore().getMaxOffsetInQueue(topic, queue);
            if (broker.getConsumerOffsetManager().queryOffset(group, topic, queue) != end) {
                return false;
            }
        }
        return true;
    }

    private int queues(String topic) {
        TopicConfig config = broker.getTopicConfigManager().selectTopicConfig(topic);
        return config == null ? 0 : config.getReadQueueNums();
    }

    private static void deleteRecursively(Path dir) {
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            System.err.println("could not delete " + dir + ": " + e);
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
        try (ServerSocket socket = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}
