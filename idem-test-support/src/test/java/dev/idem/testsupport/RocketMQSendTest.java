package dev.idem.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.remoting.exception.RemotingSendRequestException;
import org.apache.rocketmq.remoting.exception.RemotingTimeoutException;
import org.junit.jupiter.api.Test;

/** A send to a selected queue is sent again only when its request never left the client. */
class RocketMQSendTest {

    @Test
    void aRequestTheClosedChannelNeverWrote_isSentAgain() throws Exception {
        AtomicInteger sends = new AtomicInteger();

        SendResult result = RocketMQSend.untilWritten(() -> {
            if (sends.incrementAndGet() <= 2) {
                throw new RemotingSendRequestException("127.0.0.2:30570");
            }
            return answered(SendStatus.SEND_OK);
        });

        assertThat(result.getSendStatus()).isEqualTo(SendStatus.SEND_OK);
        assertThat(sends).hasValue(3);
    }

    @Test
    void aSendWhoseRouteLookupTimedOut_isSentAgain() throws Exception {
        AtomicInteger sends = new AtomicInteger();

        SendResult result = RocketMQSend.untilWritten(() -> {
            if (sends.incrementAndGet() == 1) {
                // what MQClientInstance.updateTopicRouteInfoFromNameServer throws when the name server does not answer
                throw new IllegalStateException(new RemotingTimeoutException("127.0.0.1:23793", 2770));
            }
            return answered(SendStatus.SEND_OK);
        });

        assertThat(result.getSendStatus()).isEqualTo(SendStatus.SEND_OK);
        assertThat(sends).hasValue(2);
    }

    @Test
    void anIllegalStateOfAnotherCause_isNotSentAgain() {
        AtomicInteger sends = new AtomicInteger();

        assertThatThrownBy(() -> RocketMQSend.untilWritten(() -> {
                    sends.incrementAndGet();
                    throw new IllegalStateException("producer not started");
                }))
                .hasMessage("producer not started");
        assertThat(sends).hasValue(1);
    }

    @Test
    void aRequestThatWasWritten_isNotSentAgain_itMayHaveBeenStored() {
        AtomicInteger sends = new AtomicInteger();

        assertThatThrownBy(() -> RocketMQSend.untilWritten(() -> {
                    sends.incrementAndGet();
                    throw new RemotingTimeoutException("127.0.0.2:30570", 3000);
                }))
                .isInstanceOf(RemotingTimeoutException.class);
        assertThat(sends).hasValue(1);
    }

    @Test
    void anAnswerOtherThanSendOk_failsTheSend_once() {
        AtomicInteger sends = new AtomicInteger();

        assertThatThrownBy(() -> RocketMQSend.untilWritten(() -> {
                    sends.incrementAndGet();
                    return answered(SendStatus.FLUSH_DISK_TIMEOUT);
                }))
                .hasMessageContaining("send not stored")
                .hasMessageContaining("FLUSH_DISK_TIMEOUT");
        assertThat(sends).hasValue(1);
    }

    @Test
    void aChannelThatNeverTakesTheRequest_failsTheSend_afterItsResends() {
        AtomicInteger sends = new AtomicInteger();

        assertThatThrownBy(() -> RocketMQSend.untilWritten(() -> {
                    sends.incrementAndGet();
                    throw new RemotingSendRequestException("127.0.0.2:30570");
                }))
                .isInstanceOf(RemotingSendRequestException.class);
        assertThat(sends).hasValue(RocketMQSend.MAX_SENDS_AGAIN + 1);
    }

    private static SendResult answered(SendStatus status) {
        SendResult r = new SendResult();
        r.setSendStatus(status);
        return r;
    }
}
