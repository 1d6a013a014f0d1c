package dev.idem.kafka;

import dev.idem.IdempotencyListener;
import dev.idem.RetryPolicy;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.LongSupplier;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.serialization.Deserializer;
import org.jspecify.annotations.Nullable;

/** A runner's settings, as the builder validated them. Immutable. */
record Settings<K, V>(
        String name,
        Map<String, Object> consumerConfig,
        Function<Map<String, Object>, Consumer<byte[], byte[]>> consumerFactory,
        List<String> topics,
        Deserializer<K> keyDeserializer,
        Deserializer<V> valueDeserializer,
        KeyExtractor<K, V> keyExtractor,
        @Nullable RecordHandler<K, V> handler,
        @Nullable BatchHandler<K, V> batchHandler,
        int maxBatchSize,
        Ordering ordering,
        RetryPolicy retryPolicy,
        Function<String, String> deadLetterTopic,
        @Nullable Producer<byte[], byte[]> deadLetterProducer,
        Duration deadLetterTimeout,
        boolean createDeadLetterTopics,
        int workers,
        Duration pollTimeout,
        Duration shutdownTimeout,
        @Nullable Duration handlerTimeout,
        LongSupplier nanoTime,
        IdempotencyListener listener) {

    /** Records of one partition held before the partition is paused. */
    int maxBufferedPerPartition() {
        Object maxPoll = consumerConfig.get("max.poll.records");
        int perPoll = maxPoll == null ? 500 : Integer.parseInt(maxPoll.toString());
        return Math.max(2 * perPoll, 2 * maxBatchSize);
    }

    /** True when {@code auto.offset.reset} is not {@code earliest}: the position is committed on assignment. */
    boolean commitPositionOnAssignment() {
        Object reset = consumerConfig.get("auto.offset.reset");
        return reset == null
                || !(reset.toString().equals("earliest") || reset.toString().equals("none"));
    }
}
