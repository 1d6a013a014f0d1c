package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.IdempotencyKey;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.IdempotencyStore;
import dev.idem.spi.UpdateResult;
import dev.idem.testkit.IdempotencyStoreContract;
import java.time.Clock;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The store contract on one database; a subclass names the dialect and the clock. */
abstract class JdbcStoreContract extends IdempotencyStoreContract {
    abstract Dialect dialect();

    /** Whether the store runs with {@code useDatabaseClock(true)}. Default false. */
    boolean databaseClock() {
        return false;
    }

    @Override
    protected boolean keepsItsOwnTime() {
        return databaseClock();
    }

    @Override
    protected IdempotencyStore createStore(Clock clock) {
        return JdbcStore.builder(PerClassDatabase.of(getClass(), dialect()).dataSource())
                .createTableIfMissing(true)
                .clock(clock)
                .useDatabaseClock(databaseClock())
                .build();
    }

    @Override
    protected IdempotencyStore createUnavailableStore(Clock clock) {
        return JdbcStore.builder(UrlDataSource.unreachable(dialect()))
                .dialect(dialect())
                .build();
    }

    /**
     * Review: purge deleted a claim whose lease had just lapsed with nobody taking it over (its consumer paused past
     * the lease), so the owner's late completion found nothing and a later copy ran the effect again. A lapsed claim
     * still belongs to its owner until someone takes it over; purge keeps it {@link Purge#LAPSED_CLAIM_KEPT} longer.
     */
    @Test
    void purge_keepsAClaimThatJustLapsed_soItsOwnerCanStillCompleteIt() {
        IdempotencyKey paused = key("paused");
        store.claim(ClaimRequest.of(paused, "owner-a", timedLease()));
        advance(timedLease().plus(Duration.ofMillis(500)));

        ((JdbcStore) store).purgeExpired();

        assertThat(store.complete(paused, "owner-a", null, timedRetention())).isEqualTo(UpdateResult.APPLIED);
        assertThat(store.claim(ClaimRequest.of(paused, "owner-b", timedLease())))
                .isInstanceOf(ClaimResult.Done.class);
    }
}
