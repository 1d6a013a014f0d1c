package dev.idem.spring.rocketmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.ConfigurationException;
import org.apache.rocketmq.spring.support.DefaultRocketMQListenerContainer;
import org.junit.jupiter.api.Test;

class GuardedRocketMQContainersTest {

    /** A rocketmq-spring whose container lost the private method Idem calls. */
    static final class ContainerWithoutHandleMessage {}

    @Test
    void containerWithoutHandleMessage_isAConfigurationErrorNamingTheFix() {
        assertThatThrownBy(() -> GuardedRocketMQContainers.handleMessage(ContainerWithoutHandleMessage.class))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining(ContainerWithoutHandleMessage.class.getName())
                .hasMessageContaining("handleMessage(MessageExt)")
                .hasMessageContaining("idem.rocketmq.listener=false");
    }

    @Test
    void rocketmqSpringContainer_hasTheHandleMessageIdemCalls() {
        assertThat(GuardedRocketMQContainers.handleMessage(DefaultRocketMQListenerContainer.class))
                .satisfies(m -> assertThat(m.canAccess(new DefaultRocketMQListenerContainer()))
                        .isTrue());
    }
}
