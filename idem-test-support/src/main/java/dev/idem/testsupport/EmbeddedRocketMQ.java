package dev.idem.testsupport;

import dev.idem.testkit.TcpProxy;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.broker.schedule.ScheduleMessageService;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.namesrv.NamesrvConfig;
import org.apache.rocketmq.common.topic.TopicValidator;
import org.apache.rocketmq.namesrv.NamesrvController;
import org.apache.rocketmq.remoting.common.TlsMode;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.netty.NettyServerConfig;
import org.apache.rocketmq.remoting.netty.TlsSystemConfig;
import org.apache.rocketmq.store.GetMessageResult;
import org.apache.rocketmq.store.MessageStore;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.exception.ConsumeQueueException;
import org.jspecify.annotations.Nullable;

/**
 * One RocketMQ name server and broker in this JVM, started on first use and shared by every test class (start-up
 * takes seconds; at the JVM's exit a hook deletes its store, without the broker's shutdown, which takes ten more).
 * The broker binds 127.0.0.1 but tells clients to use 127.0.0.2, where a {@link TcpProxy} forwards to it, so that a
 * test can swallow the broker's answers. Delay levels are {@value #DELAY_LEVELS}: retries within seconds. Needs
 * {@code rocketmq-broker} and {@code rocketmq-namesrv} on the test class path (netty 4.1, as {@code idem-rocketmq}
 * pins it).
 */
public final class EmbeddedRocketMQ implements AutoCloseable {
    public static final String DELAY_LEVELS = "1s 1s 1s 2s 2s 2s 3s 3s 3s 4s 4s 4s 5s 5s 5s 6s 6s 6s";
    public static final String BROKER_NAME = "idem-broker";
    private static final String ADVERTISED_HOST = "127.0.0.2";
    private static @Nullable EmbeddedRocketMQ shared;

    private final NamesrvController nameServer;
    private final BrokerController broker;
    private final TcpProxy proxy;
    private final String nameServerAddress;
    private final Path dir;

    private EmbeddedRocketMQ(Path dir) throws Exception {
        this.dir = dir;
        System.setProperty("rocketmq.remoting.version", Integer.toString(MQVersion.CURRENT_VERSION));
        // Plain TCP only: in the default mode ("permissive") every server of the name server and broker generates a
        // self-signed RSA certificate as it starts, about 3 s of CPU in all, for a TLS no test uses.
        TlsSystemConfig.tlsMode = TlsMode.DISABLED;
        int nameServerPort = FreePorts.any();
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

        int port = FreePorts.withNeighbours(2, 1); // p - 2: the VIP channel, p + 1: HA
        BrokerConfig brokerConfig = new BrokerConfig();
        brokerConfig.setBrokerName(BROKER_NAME);
        brokerConfig.setBrokerClusterName("idem-cluster");
        brokerConfig.setNamesrvAddr(nameServerAddress);
        brokerConfig.setBrokerIP1(ADVERTISED_HOST);
        brokerConfig.setListenPort(port);
        // A send may wait this long for the broker's send threads: the 200 ms default answers SYSTEM_BUSY (flow
        // control) to sends on a loaded test machine, which fails runs that prove nothing about the code under test.
        brokerConfig.setWaitTimeMillsInSendQueue(2000);
        // The broker's transaction-metrics thread spins on a core until this interval has passed since its start (10 s
        // by default): 10 s of a whole core at every start.
        brokerConfig.setTransactionMetricFlushInterval(1000);
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
        storeConfig.setMessageDelayLevel(DELAY_LEVELS);
        // Flushing the timer wheel (a week of slots) each second costs a sixth of a core for the broker's whole life.
        storeConfig.setTimerFlushIntervalMs(30_000);
        proxy = TcpProxy.start(InetAddress.getByName(ADVERTISED_HOST), port, "127.0.0.1", port);
        broker = new BrokerController(brokerConfig, brokerNetty, new NettyClientConfig(), storeConfig);
        check(broker.initialize(), "broker");
        broker.start();
        awaitRoute(TopicValidator.RMQ_SYS_SELF_TEST_TOPIC); // the broker has registered with the name server
    }

    /** A name server and broker of their own, storing in {@code dir}; {@link #close()} stops them. */
    public static EmbeddedRocketMQ start(Path dir) throws Exception {
        return new EmbeddedRocketMQ(dir);
    }

    /** The JVM's broker, started on first call. */
    public static synchronized EmbeddedRocketMQ shared() {
        if (shared == null) {
            try {
                Path dir = Files.createTempDirectory("idem-rocketmq");
                shared = new EmbeddedRocketMQ(dir);
                Runtime.getRuntime().addShutdownHook(new Thread(shared::discard, "idem-rocketmq-discard"));
            } catch (Exception e) {
                throw new IllegalStateException("the in-process RocketMQ broker did not start", e);
            }
        }
        return shared;
    }

    public String nameServer() {
        return nameServerAddress;
    }

    /** The proxy every client connection to the broker goes through. */
    public TcpProxy proxy() {
        return proxy;
    }

    /** Creates {@code topic} with {@code queues} read/write queues and waits until the name server routes it. */
    public void createTopic(String topic, int queues) {
        broker.getTopicConfigManager().updateTopicConfig(new TopicConfig(topic, queues, queues, 6));
        broker.registerBrokerAll(true, false, true);
        awaitRoute(topic);
    }

    /**
     * Waits until the name server routes {@code topic}, registering the broker again every 2 s (its own next try is
     * 30 s away when one is lost): a minute in all, for a loaded machine.
     */
    private void awaitRoute(String topic) {
        long start = System.nanoTime();
        long deadline = start + TimeUnit.MINUTES.toNanos(1);
        long reregister = start + TimeUnit.SECONDS.toNanos(2);
        while (nameServer.getRouteInfoManager().pickupTopicRouteData(topic) == null) {
            if (System.nanoTime() > reregister) {
                broker.registerBrokerAll(true, false, true);
                reregister = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("topic " + topic + " not routed by the name server within a minute");
            }
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for the route of " + topic, e);
            }
        }
    }

    /**
     * Creates {@code %RETRY%<group>} and {@code %DLQ%<group>} before the group's first consumer starts: otherwise
     * the consumer learns the retry topic's route only at its next name-server poll, 30 s later.
     */
    public void createGroupTopics(String group) {
        createTopic(MixAll.getRetryTopic(group), 1);
        createTopic(MixAll.getDLQTopic(group), 1);
    }

    /** Every message stored in {@code topic}, read from the broker's store. */
    public List<MessageExt> messages(String topic) throws ConsumeQueueException {
        MessageStore store = broker.getMessageStore();
        TopicConfig config = broker.getTopicConfigManager().selectTopicConfig(topic);
        List<MessageExt> messages = new ArrayList<>();
        if (config == null) {
            return messages;
        }
        for (int queue = 0; queue < config.getReadQueueNums(); queue++) {
            long offset = store.getMinOffsetInQueue(topic, queue);
            long end = store.getMaxOffsetInQueue(topic, queue);
            while (offset < end) {
                GetMessageResult result = store.getMessage("idem-test-reader", topic, queue, offset, 32, null);
                if (result == null || result.getMessageBufferList().isEmpty()) {
                    break;
                }
                try {
                    for (ByteBuffer buffer : result.getMessageBufferList()) {
                        messages.add(MessageDecoder.decode(buffer));
                    }
                } finally {
                    result.release();
                }
                offset = result.getNextBeginOffset();
            }
        }
        return messages;
    }

    /** The offset the broker holds for {@code group} on queue {@code queue} of {@code topic}, -1 if none. */
    public long committedOffset(String group, String topic, int queue) {
        return broker.getConsumerOffsetManager().queryOffset(group, topic, queue);
    }

    public long endOffset(String topic, int queue) throws ConsumeQueueException {
        return broker.getMessageStore().getMaxOffsetInQueue(topic, queue);
    }

    /**
     * The messages the broker holds back for a delay level (a consumer's retry sent back with a delay, a delayed send)
     * that it has not yet put into their topic: the schedule topic's queue of each level against the offset the
     * broker's delivery of that level has reached. On a loaded machine that delivery runs late.
     */
    public long scheduledPending() throws ConsumeQueueException {
        ScheduleMessageService schedule = broker.getScheduleMessageService();
        long pending = 0;
        for (int level = 1; level <= schedule.getMaxDelayLevel(); level++) {
            long end =
                    endOffset(TopicValidator.RMQ_SYS_SCHEDULE_TOPIC, ScheduleMessageService.delayLevel2QueueId(level));
            pending += Math.max(0, end - schedule.getOffsetTable().getOrDefault(level, 0L));
        }
        return pending;
    }

    /**
     * Cuts every client off the broker at once (its connections go through the proxy) and stops the broker and name
     * server in the background, deleting the store after them: their shutdown joins service threads one by one for 10
     * to 20 s, which no caller waits for (a lab run ended 20 s after its verdict). Ports are never given twice in a
     * JVM, so a broker started meanwhile is not in the way.
     */
    @Override
    public void close() {
        proxy.close();
        Thread stopping = new Thread(
                () -> {
                    broker.shutdown();
                    nameServer.shutdown();
                    PrivateServer.deleteRecursively(dir);
                },
                "idem-rocketmq-close");
        stopping.setDaemon(true);
        stopping.start();
    }

    /**
     * What an exiting JVM needs of its shared broker: its store deleted. Not {@link #close()}: the broker's and name
     * server's shutdown, which takes 10 to 20 s, would not finish before the JVM does.
     */
    private void discard() {
        proxy.close();
        PrivateServer.deleteRecursively(dir);
    }

    private static void check(boolean initialized, String what) {
        if (!initialized) {
            throw new IllegalStateException("the in-process RocketMQ " + what + " did not initialize");
        }
    }
}
