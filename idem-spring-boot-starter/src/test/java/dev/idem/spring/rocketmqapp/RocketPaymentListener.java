package dev.idem.spring.rocketmqapp;

import dev.idem.spring.Idempotent;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.spring.annotation.RocketMQMessageListener;
import org.apache.rocketmq.spring.core.RocketMQListener;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

// readme:spring-rocketmq-listener begin
@Component
@RocketMQMessageListener(topic = "${payments.topic}", consumerGroup = "${payments.group}")
public class RocketPaymentListener implements RocketMQListener<MessageExt> {
    private final RocketLedger ledger;

    RocketPaymentListener(RocketLedger ledger) {
        this.ledger = ledger;
    }

    @Override
    @Transactional
    @Idempotent(namespace = "rocket-payments", key = "#message.keys", fingerprint = "#message.body")
    public void onMessage(MessageExt message) {
        ledger.apply(message);
    }
}
// readme:spring-rocketmq-listener end
