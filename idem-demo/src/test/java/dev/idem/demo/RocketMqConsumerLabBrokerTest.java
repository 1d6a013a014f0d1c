package dev.idem.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.remoting.exception.RemotingSendRequestException;
import org.apache.rocketmq.remoting.exception.RemotingTimeoutException;
import org.junit.jupiter.api.Test;

/**
 * The consumer lab's RocketMQ sends are never lost to one failure: in CI one {@code RemotingSendRequestException}
 * ("send request to </127.0.0.2:…> failed") failed a whole lab run; a send to a selected queue is not retried by the
 * client; nor to a name-server timeout while the client fetches the topic's route (seen in CI).
 */
class RocketMqConsumerLabBrokerTest {

    @Test
    void aSendThatFails_isSentAgain_untilTheBrokerStoresIt() throws Exception {
        AtomicInteger sends = new AtomicInteger();

        SendResult result = RocketMqConsumerLabBroker.sendUntilStored(() -> {
            if (sends.incrementAndGet() <= 2) {
                throw new RemotingSendRequestException("127.0.0.2:30570");
            }
            return stored(SendStatus.SEND_OK);
        });

        assertThat(result.getSendStatus()).isEqualTo(SendStatus.SEND_OK);
        assertThat(sends).hasValue(3);
    }

    @Test
    void aSendWhoseRouteLookupTimedOut_isSentAgain() throws Exception {
        AtomicInteger sends = new AtomicInteger();

        SendResult result = RocketMqConsumerLabBroker.sendUntilStored(() -> {
            if (sends.incrementAndGet() == 1) {
                throw routeLookupTimedOut();
            }
            return stored(SendStatus.SEND_OK);
        });

        assertThat(result.getSendStatus()).isEqualTo(SendStatus.SEND_OK);
        assertThat(sends).hasValue(2);
    }

    /** What {@code MQClientInstance.updateTopicRouteInfoFromNameServer} throws when the name server does not answer. */
    static IllegalStateException routeLookupTimedOut() {
        return new IllegalStateException(new RemotingTimeoutException("127.0.0.1:23793", 2770));
    }

    @Test
    void aSendTheBrokerNeverConfirms_failsTheRun_withTheLastAnswer() {
        AtomicInteger sends = new AtomicInteger();

        assertThatThrownBy(() -> RocketMqConsumerLabBroker.sendUntilStored(() -> {
                    sends.incrementAndGet();
                    return stored(SendStatus.FLUSH_DISK_TIMEOUT);
                }))
                .hasMessageContaining("send not stored")
                .hasMessageContaining("FLUSH_DISK_TIMEOUT");
        assertThat(sends).hasValue(AcknowledgedSends.MAX_SENDS_AGAIN + 1);
    }

    private static SendResult stored(SendStatus status) {
        SendResult r = new SendResult();
        r.setSendStatus(status);
        return r;
    }
}
