package dev.idem.rocketmq;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.Delivery;
import dev.idem.Outcome;
import dev.idem.jdbc.JdbcInbox;
import dev.idem.testsupport.ChildJvm;
import java.util.concurrent.CountDownLatch;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;

/**
 * One consumer process of {@link KillNineTest}: a push consumer with the guarded concurrent listener and {@link
 * JdbcInbox} on PostgreSQL, which the test SIGKILLs at random moments. It prints {@link ChildJvm#TRANSACTION_OPEN}
 * and the key while a debit's transaction is open, so that the test can kill it mid-transaction.
 *
 * <p>Arguments: name server, topic, group, JDBC URL, inbox namespace.
 */
final class KillNineConsumer {
    private KillNineConsumer() {}

    public static void main(String[] args) throws Exception {
        String nameServer = args[0];
        String topic = args[1];
        String group = args[2];
        String jdbcUrl = args[3];
        String namespace = args[4];
        HikariConfig pool = new HikariConfig();
        pool.setJdbcUrl(jdbcUrl);
        pool.setMaximumPoolSize(4);
        try (HikariDataSource dataSource = new HikariDataSource(pool)) {
            JdbcInbox inbox = JdbcInbox.builder(dataSource).namespace(namespace).build();
            DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
            consumer.setNamesrvAddr(nameServer);
            consumer.setInstanceName(group + "-" + ProcessHandle.current().pid());
            consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            consumer.setPersistConsumerOffsetInterval(200);
            consumer.setHeartbeatBrokerInterval(1000);
            consumer.setPollNameServerInterval(1000);
            consumer.setConsumeThreadMin(4);
            consumer.setConsumeThreadMax(4);
            consumer.subscribe(topic, "*");
            consumer.registerMessageListener(RocketMQFixture.idem(consumer)
                    .keyFrom(KeyExtractor.keys())
                    .handler((key, message) -> inbox.handle(Delivery.of(key), c -> {
                        ChildJvm.debitWithTransactionOpen(c, RocketMQFixture.body(message), 1, key);
                        return Outcome.processed();
                    }))
                    .build()
                    .concurrently());
            consumer.start();
            new CountDownLatch(1).await(); // until killed
        }
    }
}
