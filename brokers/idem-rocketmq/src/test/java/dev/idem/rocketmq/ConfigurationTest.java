package dev.idem.rocketmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.ConfigurationException;
import dev.idem.Outcome;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.remoting.protocol.heartbeat.MessageModel;
import org.junit.jupiter.api.Test;

/** What {@link IdempotentRocketMQ.Builder#build()} refuses or warns about, and the small value types. No broker. */
class ConfigurationTest {

    private static IdempotentRocketMQ.Builder builder(DefaultMQPushConsumer consumer) {
        return IdempotentRocketMQ.builder(consumer)
                .keyFrom(KeyExtractor.keys())
                .handler((key, message) -> Outcome.processed());
    }

    @Test
    void build_ownsTheAttemptBound_setsMaxReconsumeTimesSoRocketMQNeverCountsOut() {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("cfg-group");
        builder(consumer).build();
        assertThat(consumer.getMaxReconsumeTimes()).isEqualTo(Integer.MAX_VALUE);
    }

    @Test
    void build_refusesAConsumerWithItsOwnMaxReconsumeTimes() {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("cfg-group");
        consumer.setMaxReconsumeTimes(3);
        assertThatThrownBy(() -> builder(consumer).build())
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("maxReconsumeTimes=3")
                .hasMessageContaining("maxAttempts");
    }

    @Test
    void build_refusesBroadcasting_whereRocketMQDropsWhatIsNotConsumed() {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("cfg-group");
        consumer.setMessageModel(MessageModel.BROADCASTING);
        assertThatThrownBy(() -> builder(consumer).build())
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("CLUSTERING");
    }

    @Test
    void build_withoutKeyOrHandler_namesTheMissingCall() {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("cfg-group");
        assertThatThrownBy(() -> IdempotentRocketMQ.builder(consumer).build()).hasMessageContaining(".keyFrom(");
        assertThatThrownBy(() -> IdempotentRocketMQ.builder(consumer)
                        .keyFrom(KeyExtractor.keys())
                        .build())
                .hasMessageContaining(".handler(");
    }

    @Test
    void build_groupThatIsNoNamespace_asksForOne() {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("%weird|group");
        assertThatThrownBy(() -> builder(consumer).build()).hasMessageContaining(".namespace(");
        assertThat(builder(consumer).namespace("weird-group").build()).isNotNull();
    }

    @Test
    void leaseShorterThanConsumeTimeout_withoutWatchdog_warns() {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("cfg-group");
        consumer.setConsumeTimeout(15);
        IdempotentRocketMQ idem =
                builder(consumer).lease(Duration.ofSeconds(30), false).build();
        assertThat(idem.warnings())
                .singleElement()
                .asString()
                .contains("consumeTimeout (PT15M)")
                .contains("apache/rocketmq#1600")
                .contains("watchdog");
    }

    @Test
    void leaseWithWatchdog_orAtLeastConsumeTimeout_orNoLease_isConsistent() {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("cfg-group");
        consumer.setConsumeTimeout(15);
        assertThat(builder(consumer).lease(Duration.ofSeconds(30), true).build().warnings())
                .isEmpty();
        assertThat(builder(consumer)
                        .lease(Duration.ofMinutes(15), false)
                        .build()
                        .warnings())
                .isEmpty();
        assertThat(builder(consumer).build().warnings()).isEmpty();
    }

    @Test
    void delayLevels_firstLevelAtLeastTheDelay_lastForLongerOnes() {
        DelayLevels levels = DelayLevels.rocketmqDefault();
        assertThat(levels.size()).isEqualTo(18);
        assertThat(levels.levelFor(Duration.ZERO)).isEqualTo(1);
        assertThat(levels.levelFor(Duration.ofMillis(200))).isEqualTo(1);
        assertThat(levels.levelFor(Duration.ofSeconds(5))).isEqualTo(2);
        assertThat(levels.levelFor(Duration.ofSeconds(6))).isEqualTo(3);
        assertThat(levels.levelFor(Duration.ofMinutes(45))).isEqualTo(17);
        assertThat(levels.levelFor(Duration.ofDays(1))).isEqualTo(18);
        assertThat(levels.delayOf(18)).isEqualTo(Duration.ofHours(2));
    }

    @Test
    void delayLevels_badTable_namesTheBadLevel() {
        assertThatThrownBy(() -> DelayLevels.parse("1s 5x")).hasMessageContaining("'5x'");
        assertThatThrownBy(() -> DelayLevels.parse("10s 5s")).hasMessageContaining("must not decrease");
        assertThatThrownBy(() -> DelayLevels.parse(" ")).hasMessageContaining(DelayLevels.ROCKETMQ_DEFAULT);
    }

    @Test
    void uniqueKey_readsUniqKeyOnly_neverTheBrokersPerCopyOffsetId() throws Exception {
        MessageClientExt delivered = new MessageClientExt();
        delivered.setOffsetMsgId("7F00000100002A9F0000000000000010");
        assertThat(delivered.getMsgId())
                .as("RocketMQ falls back to the per-copy id")
                .isNotNull();
        assertThat(KeyExtractor.uniqueKey().extract(delivered)).isNull();
        MessageAccessor.putProperty(delivered, MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, "AC11000100002A9F");
        assertThat(KeyExtractor.uniqueKey().extract(delivered)).isEqualTo("AC11000100002A9F");
    }

    @Test
    void producerKey_stampedOnce_resendKeepsIt_anotherKeyIsRefused() {
        Message message = new Message("t", "body".getBytes(StandardCharsets.UTF_8));
        RocketMQProducers.withKey(message, "10086:PAY");
        assertThat(RocketMQProducers.withKey(message, "10086:PAY")).isSameAs(message);
        assertThat(RocketMQProducers.withMessageId(message).getUserProperty(RocketMQProducers.KEY_PROPERTY))
                .isEqualTo("10086:PAY");
        assertThatThrownBy(() -> RocketMQProducers.withKey(message, "10087:PAY"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("before the first send");
        assertThat(RocketMQProducers.key(message)).contains("10086:PAY");
    }
}
