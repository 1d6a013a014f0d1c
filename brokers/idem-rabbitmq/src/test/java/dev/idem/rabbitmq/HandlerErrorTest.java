package dev.idem.rabbitmq;

import static dev.idem.rabbitmq.RabbitFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import dev.idem.Outcome;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/** A handler's {@link Error} is a crash of the consumer: what happens to its channels and to the others' work. */
class HandlerErrorTest {

    static final class HandlerCrash extends Error {
        private static final long serialVersionUID = 1L;

        HandlerCrash() {
            super("simulated handler crash");
        }
    }

    @Test
    void errorWhileStartIsStillOpeningChannels_closesEveryChannel() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("crashstart");
                Connection real = RabbitFixture.connect()) {
            queues.publish("m-1", "x");
            Connection connection = laterChannelsWaitForTheFirstAbort(real);
            List<Throwable> uncaught = new CopyOnWriteArrayList<>();
            Thread.UncaughtExceptionHandler previous = Thread.getDefaultUncaughtExceptionHandler();
            Thread.setDefaultUncaughtExceptionHandler((thread, e) -> uncaught.add(e));
            try {
                var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                        .declareTopology(true)
                        .concurrency(5)
                        .handler((key, message) -> {
                            throw new HandlerCrash();
                        })
                        .build()
                        .start();
                try {
                    await().atMost(WAIT)
                            .until(() -> consumer.failure().isPresent()
                                    && queues.consumers(queues.queue()) == 0
                                    && queues.depth(queues.queue()) == 1);
                    assertThat(consumer.failure()).get().isInstanceOf(HandlerCrash.class);
                    assertThat(consumer.isRunning()).isFalse();
                } finally {
                    consumer.close();
                }
            } finally {
                Thread.setDefaultUncaughtExceptionHandler(previous);
            }
            assertThat(uncaught).as("thrown out of the consumer's threads").isEmpty();
        }
    }

    @Test
    void errorOnOneChannel_theOthersFinishTheMessageInHandUninterruptedAndAckIt() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("crashothers");
                Connection connection = RabbitFixture.connect()) {
            queues.publish("slow", "slow");
            queues.publish("crash", "crash");
            CountDownLatch slowInHand = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            AtomicBoolean interrupted = new AtomicBoolean();
            AtomicInteger slowDone = new AtomicInteger();
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .concurrency(2)
                    .prefetch(1)
                    .handler((key, message) -> {
                        if (key.equals("crash")) {
                            slowInHand.await(WAIT.toSeconds(), TimeUnit.SECONDS);
                            throw new HandlerCrash();
                        }
                        slowInHand.countDown();
                        try {
                            release.await(WAIT.toSeconds(), TimeUnit.SECONDS);
                        } catch (InterruptedException e) {
                            interrupted.set(true);
                            throw e;
                        }
                        slowDone.incrementAndGet();
                        return Outcome.processed();
                    })
                    .build()
                    .start()) {
                // the crashed message is back; a quorum queue keeps counting a cancelled consumer until its unacked
                // message is settled
                await().atMost(WAIT).until(() -> consumer.failure().isPresent() && queues.depth(queues.queue()) == 1);
                release.countDown();
                await().atMost(WAIT).until(() -> slowDone.get() == 1 || interrupted.get());
            }
            assertThat(interrupted)
                    .as("the other channel's handler was interrupted")
                    .isFalse();
            assertThat(queues.drain(queues.queue()))
                    .as("only the crashed message goes back; the finished one is acked")
                    .extracting(r -> r.getProps().getMessageId())
                    .containsExactly("crash");
        }
    }

    /**
     * {@code real}, except that the channels after the second (the topology's, then the first consumer channel) are
     * only created once the consumer aborts that first consumer channel: its delivery crashes the consumer while
     * start() is still opening the others.
     */
    private static Connection laterChannelsWaitForTheFirstAbort(Connection real) {
        AtomicInteger created = new AtomicInteger();
        CountDownLatch firstAborted = new CountDownLatch(1);
        return delegate(Connection.class, real, (method, args) -> {
            if (!method.getName().equals("createChannel") || method.getParameterCount() != 0) {
                return null;
            }
            int n = created.incrementAndGet();
            if (n > 2) {
                firstAborted.await(WAIT.toSeconds(), TimeUnit.SECONDS);
            } else if (n == 2) {
                return delegate(Channel.class, real.createChannel(), (m, a) -> {
                    if (m.getName().equals("abort")) {
                        firstAborted.countDown();
                    }
                    return null;
                });
            }
            return null;
        });
    }

    interface Hook {
        /** Runs before {@code method}; a non-null result replaces the call. */
        @Nullable
        Object before(Method method, Object @Nullable [] args) throws Exception;
    }

    private static <T> T delegate(Class<T> type, T real, Hook hook) {
        return type.cast(Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, (proxy, method, args) -> {
            Object replaced = hook.before(method, args);
            if (replaced != null) {
                return replaced;
            }
            try {
                return method.invoke(real, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        }));
    }
}
